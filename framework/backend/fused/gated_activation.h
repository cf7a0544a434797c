// Fused gated activation of a SwiGLU / GeGLU feed-forward block: act(gate) ⊙ up from the one
// product x·[W_gate; W_up]ᵀ, and its gradient, each in one pass over the rows.
#pragma once

#include "framework/backend/primitives/convert.h"
#include "framework/backend/primitives/elementwise.h"
#include "framework/tensor/tensor.h"

namespace rota::backend {

/// y[r, j] = act(gu[r, j]) · gu[r, H + j] for gu = [gate | up]: [R, 2H] → y [R, H]. f32 (a fused
/// pass, the activation into an L1 buffer per row) or f64 (the composed ops). gu any strides
/// (copied when not contiguous). act must satisfy derivative_needs_only_input (silu: SwiGLU,
/// gelu: GeGLU).
Tensor gated_activation(UnaryOp act, const Tensor& gu);

/// gated_activation(act, gu) rounded to bf16, [R, H], in one pass (the unrounded f32 product is
/// never stored): a bf16 tensor, bit for bit to_bf16(gated_activation(act, gu)) (kToBf16), or
/// an f32 tensor of those values (kToBf16Values, the portable path). gu f32 [R, 2H].
Tensor gated_activation_to_bf16(UnaryOp act, const Tensor& gu,
                                Bf16Rounding rounding = Bf16Rounding::kToBf16);

/// The gradient of gated_activation: gu [R, 2H], dy [R, H] → dgu [R, 2H] with
///   dgate[r, j] = dy[r, j] · up[r, j] · act'(gate[r, j]),  dup[r, j] = dy[r, j] · act(gate[r, j]).
/// Same dtype rules as gated_activation.
Tensor gated_activation_backward(UnaryOp act, const Tensor& gu, const Tensor& dy);

}  // namespace rota::backend
