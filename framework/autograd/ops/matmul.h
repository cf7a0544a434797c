// Differentiable matrix products: matmul (batched, broadcasting) and linear (x·Wᵀ + b).
#pragma once

#include "framework/autograd/variable.h"

namespace rota {

/// Batched matrix product like torch.matmul (see backend::matmul): a [..., M, K] (or
/// [..., K, M] with transpose_a), b [..., K, N] (or [..., N, K] with transpose_b), batch dims
/// broadcast, 1-D operands promoted and squeezed. Gradients are summed over broadcast dims.
Variable matmul(const Variable& a, const Variable& b, bool transpose_a = false,
                bool transpose_b = false);

/// y = x·weightᵀ + bias. x: [..., In], weight: [Out, In], bias: [Out] or an undefined
/// Variable for none → y: [..., Out].
Variable linear(const Variable& x, const Variable& weight, const Variable& bias = Variable());

}  // namespace rota
