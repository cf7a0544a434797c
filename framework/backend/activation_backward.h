// Fused backward of linear → activation: the activation's gradient, its bias column sums and
// (for bf16 products) its bf16 rounding in one pass over the rows.
#pragma once

#include "framework/backend/elementwise.h"
#include "framework/tensor/tensor.h"

namespace rota::backend {

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
