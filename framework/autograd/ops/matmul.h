// Differentiable matrix products: matmul (batched, broadcasting) and linear (x·Wᵀ + b).
#pragma once

#include "framework/autograd/variable.h"
#include "framework/backend/primitives/elementwise.h"

namespace rota {

/// Batched matrix product like torch.matmul (see backend::matmul): a [..., M, K] (or
/// [..., K, M] with transpose_a), b [..., K, N] (or [..., N, K] with transpose_b), batch dims
/// broadcast, 1-D operands promoted and squeezed. Gradients are summed over broadcast dims.
Variable matmul(const Variable& a, const Variable& b, bool transpose_a = false,
                bool transpose_b = false);

/// y = x·weightᵀ + bias. x: [..., In], weight: [Out, In], bias: [Out] or an undefined
/// Variable for none → y: [..., Out].
Variable linear(const Variable& x, const Variable& weight, const Variable& bias = Variable());

/// y = act(x·weightᵀ + bias) as one op (the first half of a feed-forward block). Same values and
/// gradients as linear followed by the activation op, bit for bit, but the backward makes one
/// pass over the rows for the activation's gradient, the bias gradient and (under bf16) the
/// gradient's bf16 rounding instead of three. x: [..., In], weight: [Out, In], bias: [Out]
/// (required); act: kRelu, kGeluErf, kGeluTanh or kSilu (backend::derivative_needs_only_input).
/// Saves the pre-activation h [..., Out] and the product operands.
Variable linear_activation(const Variable& x, const Variable& weight, const Variable& bias,
                           backend::UnaryOp act);

}  // namespace rota
