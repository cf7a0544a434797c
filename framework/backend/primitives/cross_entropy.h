// Fused log-softmax + negative log-likelihood (cross-entropy) kernels: forward and backward.
#pragma once

#include <cstdint>

#include "framework/tensor/tensor.h"

namespace rota::backend {

/// How per-row losses are combined.
enum class Reduction {
  kNone,  // one loss per row, shaped like targets (0 for ignored rows)
  kMean,  // sum over non-ignored rows / their count (NaN when every row is ignored, as PyTorch)
  kSum,   // sum over non-ignored rows
};

const char* reduction_name(Reduction reduction);

/// Options shared by the forward and the backward.
struct CrossEntropyOptions {
  int64_t ignore_index = -100;   // rows whose target equals this contribute no loss or gradient
  double label_smoothing = 0.0;  // ε in [0, 1]: target distribution (1-ε)·onehot + ε/C
  Reduction reduction = Reduction::kMean;
};

/// Outputs of cross_entropy_forward.
struct CrossEntropyForward {
  Tensor loss;             // [] for kMean/kSum, targets' shape for kNone; dtype of logits
  Tensor logsumexp;        // [R] log Σ_c exp(z_c) of each row (saved for the backward)
  int64_t valid_rows = 0;  // rows whose target is not ignore_index
};

/// logits: [..., C] f32/f64 seen as R rows of C; targets: [...] i32/i64 with the leading shape
/// of logits. With lse = log Σ_c exp(z_c) and t the row's target:
///   loss_row = (1-ε)·(lse - z_t) + ε·(lse - mean_c(z_c)),  0 for ignored rows.
/// Log-probabilities and one-hot targets are never materialised. A target outside [0, C) that
/// is not ignore_index is an error naming the op, the value and C.
CrossEntropyForward cross_entropy_forward(const Tensor& logits, const Tensor& targets,
                                          const CrossEntropyOptions& options);

/// dlogits[r, c] = (softmax(z_r)_c - ((1-ε)·[c == t_r] + ε/C)) · g_r, 0 for ignored rows, where
/// g_r = grad_loss (kSum), grad_loss / valid_rows (kMean) or grad_loss[r] (kNone). The softmax
/// is recomputed row by row from the logits and the saved logsumexp. Returns [..., C].
Tensor cross_entropy_backward(const Tensor& grad_loss, const Tensor& logits, const Tensor& targets,
                              const Tensor& logsumexp, int64_t valid_rows,
                              const CrossEntropyOptions& options);

}  // namespace rota::backend
