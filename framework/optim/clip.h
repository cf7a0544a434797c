// Gradient clipping by global L2 norm, with non-finite detection for the trainer.
#pragma once

#include <vector>

#include "framework/autograd/variable.h"

namespace rota::optim {

/// Global L2 norm of the gradients of `params` (sqrt of the sum of every element squared),
/// accumulated in double. Parameters without a gradient are skipped; a parameter listed twice
/// counts once. NaN or inf when any gradient element is non-finite (NaN wins over inf).
/// The result does not depend on the thread count (fixed blocks, summed in a fixed order).
double grad_norm(const std::vector<Variable>& params);

/// Computes grad_norm(params) and, when it exceeds max_norm (> 0), scales every gradient in
/// place by max_norm / norm so the global norm becomes max_norm. Returns the norm before
/// clipping. When the norm is NaN or inf nothing is scaled and that value is returned, so the
/// trainer can stop or skip the step. (PyTorch divides by norm + 1e-6; we divide by the norm
/// itself, so the clipped norm is max_norm to rounding.)
double clip_grad_norm(const std::vector<Variable>& params, double max_norm);

}  // namespace rota::optim
