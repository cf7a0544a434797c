// Differentiable layer norm and RMS norm over the last dim, backed by the fused norm kernels.
#pragma once

#include "framework/autograd/variable.h"

namespace rota {

/// y = (x - mean) / sqrt(var + eps) * weight + bias, normalised over the last dim of x: [..., D]
/// (biased variance, as torch.nn.functional.layer_norm). weight and bias are [D]; an undefined
/// Variable means no scale / no shift. Saves x, the per-row mean and rstd, and weight, and only
/// when some input needs a gradient.
Variable layer_norm(const Variable& x, const Variable& weight = Variable(),
                    const Variable& bias = Variable(), double eps = 1e-5);

/// y = x / sqrt(mean(x²) + eps) * weight over the last dim of x: [..., D]; weight is [D] or
/// undefined (no scale).
Variable rms_norm(const Variable& x, const Variable& weight = Variable(), double eps = 1e-6);

}  // namespace rota
