// Differentiable losses: cross-entropy over the last dim (fused log-softmax + NLL).
#pragma once

#include <cstdint>

#include "framework/autograd/variable.h"
#include "framework/backend/primitives/cross_entropy.h"

namespace rota {

using Reduction = backend::Reduction;

/// Cross-entropy between logits: [..., C] (f32/f64) and integer class targets: [...] (i32/i64),
/// with PyTorch semantics (torch.nn.functional.cross_entropy with class-index targets):
///   loss_row = (1-ε)·(lse - z_t) + ε·(lse - mean_c(z_c)),  lse = log Σ_c exp(z_c),  ε =
///   label_smoothing
/// Rows whose target is ignore_index contribute neither loss nor gradient; kMean divides by the
/// number of remaining rows, so when every row is ignored the kMean loss is NaN (0 / 0), as in
/// PyTorch (its gradient is then all zeros). kNone returns one loss per row (0 where ignored).
/// A target outside [0, C) other than ignore_index is an error. Targets get no gradient.
/// Saves the logits, the targets and the per-row logsumexp [R] for the backward.
Variable cross_entropy(const Variable& logits, const Tensor& targets, int64_t ignore_index = -100,
                       double label_smoothing = 0.0, Reduction reduction = Reduction::kMean);

}  // namespace rota
