// Analytic FLOP count of a training step (forward + backward) for throughput and MFU figures.
#pragma once

#include <cstdint>

#include "models/model_options.h"

namespace rota::models {

/// Floating-point operations per trained token (forward + backward ≈ 3 × forward) of the
/// matrix products, counting a multiply-add as 2:
///   projections and FFN per layer: 2·(4E² + 2EF) (5E² with an output gate), or 3EF for a
///   gated FFN (SwiGLU, GeGLU: W_gate, W_up and W_down); output head over the vocabulary: 2·V·E
///   (masked LMs and classifiers also pay it / their head the same way);
///   linear attention per layer and head, chunked causal with chunk C and feature dim D'
///   (D' = 2D for LRPE type 1): 2·C·D' (scores, half of a C×C block on average ×2 products)
///   + 4·D'·D (state read and update); bidirectional: 4·D'·D;
///   softmax attention per layer and head: 4·N·D (causal: half).
/// Elementwise work (norms, activations, φ, LRPE rotations) is not counted, as in the usual
/// 6·N·params convention.
double training_flops_per_token(const ModelOptions& options, int64_t sequence_length);

}  // namespace rota::models
