// Fused activation passes of a feed-forward block: the activation written straight to bf16 (the
// operand of the next bf16 product), and the backward's activation gradient, bias column sums
// and bf16 rounding in one pass over the rows.
#pragma once

#include "framework/backend/primitives/convert.h"
#include "framework/backend/primitives/elementwise.h"
#include "framework/tensor/tensor.h"

namespace rota::backend {

/// act(h) rounded to bf16, [same shape], in one pass (no unrounded f32 activation is stored): a
/// bf16 tensor, bit for bit to_bf16(unary(act, h)) (kToBf16), or an f32 tensor of those values,
/// bit for bit round_to_bf16_values(unary(act, h)) (kToBf16Values, the portable path).
/// h: f32, any shape and strides.
Tensor activation_to_bf16(UnaryOp act, const Tensor& h,
                          Bf16Rounding rounding = Bf16Rounding::kToBf16);

struct ActivationBackward {
  Tensor grad_input;   // [R, C]: dh = dy ⊙ act'(h), stored as the rounding asks
  Tensor column_sums;  // [C] f32: Σ_r dh[r, :], the bias gradient
};

/// For y = act(h), h and dy [R, C] f32 (any strides; copied when not contiguous): dh and its
/// column sums in one pass over row chunks, with dh stored as `rounding` says (rounded to bf16 —
/// what a bf16 linear's backward multiplies — or in f32). Bit for bit
/// unary_backward(act, h, ·, dy), reduce_sum(dh, {0}) (of the unrounded dh) and to_bf16(dh) or
/// round_to_bf16_values(dh). act must satisfy derivative_needs_only_input (relu, gelu,
/// gelu_tanh, silu).
ActivationBackward activation_backward_with_column_sums(UnaryOp act, const Tensor& h,
                                                        const Tensor& dy, Bf16Rounding rounding);

}  // namespace rota::backend
