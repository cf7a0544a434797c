// Analytic memory of a model before it is built: parameters, training state and activations.
#pragma once

#include <cstdint>

#include "models/model_options.h"

namespace rota::models {

/// Bytes a run will hold, split by what holds them (all analytic, nothing allocated).
struct MemoryEstimate {
  double parameters = 0;        // trainable and frozen parameter count
  double parameter_bytes = 0;   // the parameters themselves (f32 master copies)
  double state_bytes = 0;       // training only: gradients, AdamW moments, bf16 copies
  double activation_bytes = 0;  // training: saved for the backward pass; inference: live in
                                // the widest layer of one forward pass
  double total() const { return parameter_bytes + state_bytes + activation_bytes; }
};

/// The number of parameters the model of `options` registers (exact: a test compares it with
/// built models of every kind and encoding).
double parameter_count(const ModelOptions& options);

/// One training step with `batch` sequences of `sequence_length` tokens per micro-batch,
/// AdamW (two moments per parameter) and, for bf16, the bf16 parameter copies.
MemoryEstimate training_memory(const ModelOptions& options, int64_t batch, int64_t sequence_length);

/// `estimate` (from training_memory) for a model of which only `trainable` parameters train
/// (frozen parameters, low-rank adapters): gradients and AdamW moments for those only; bf16 runs
/// still keep bf16 copies of every weight. The adapters' own weights are not in `parameters`:
/// pass them in `added` (they count as parameters and train).
MemoryEstimate with_trainable_parameters(MemoryEstimate estimate, double trainable, double added,
                                         DType dtype);

/// One forward pass without gradients (eval, predict) over `batch` × `sequence_length` tokens.
MemoryEstimate inference_memory(const ModelOptions& options, int64_t batch,
                                int64_t sequence_length);

}  // namespace rota::models
