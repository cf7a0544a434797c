// Fused activation passes of a feed-forward block: the activation written straight to bf16 (the
// operand of the next bf16 product), and the backward's activation gradient, bias column sums
// and bf16 rounding in one pass over the rows.
#pragma once

#include "framework/backend/primitives/elementwise.h"
#include "framework/tensor/tensor.h"

namespace rota::backend {

/// act(h) rounded to bf16, [same shape] bf16, in one pass (no f32 activation is stored):
/// bit for bit to_bf16(unary(act, h)). h: f32, any shape and strides.
Tensor activation_to_bf16(UnaryOp act, const Tensor& h);

struct ActivationBackward {
  Tensor grad_input;   // [R, C]: dh = dy ⊙ act'(h), f32 — or bf16 when rounded
  Tensor column_sums;  // [C] f32: Σ_r dh[r, :], the bias gradient
};

/// For y = act(h), h and dy [R, C] f32 (any strides; copied when not contiguous): dh and its
/// column sums in one pass over row chunks, with dh rounded to bf16 (round_to_bf16) instead of
/// stored in f32 — what a bf16 linear's backward multiplies. Bit for bit
/// unary_backward(act, h, ·, dy), reduce_sum(dh, {0}) and to_bf16(dh). act must satisfy
/// derivative_needs_only_input (relu, gelu, gelu_tanh, silu).
ActivationBackward activation_backward_with_column_sums(UnaryOp act, const Tensor& h,
                                                        const Tensor& dy, bool round_to_bf16);

}  // namespace rota::backend
