// Differentiable fused LRPE: y = Λ(s)(P x) with gradients for x, θ and the Householder vector.
#pragma once

#include "framework/autograd/variable.h"
#include "framework/backend/fused/lrpe.h"

namespace rota {

/// x: [..., N, D] (after the feature map φ). theta: [D] (Type 1), [⌊D/2⌋] (Type 2) or
/// undefined (Type 3). w: the unit Householder vector [D] (the caller normalises a learnable
/// v with differentiable ops, so v's gradient flows through w) or undefined. permutation: [D]
/// i64 for Type 3. Returns [..., N, F].
Variable lrpe(const backend::LrpeKernelConfig& config, const Variable& x, const Variable& theta,
              const Variable& w, const Tensor& permutation = Tensor());

}  // namespace rota
