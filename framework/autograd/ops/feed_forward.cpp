// feed_forward op: forward through one fused activation pass, backward through the fused
// gradient passes of backend/fused_activation.h and convert.h.
#include "framework/autograd/ops/feed_forward.h"

#include "framework/autograd/function.h"
#include "framework/autograd/precision.h"
#include "framework/backend/fused/fused_activation.h"
#include "framework/backend/fused/gated_activation.h"
#include "framework/backend/primitives/convert.h"
#include "framework/backend/primitives/matmul.h"
#include "framework/backend/primitives/reduce.h"

namespace rota {

namespace b = backend;

Variable feed_forward(const Variable& x, const Variable& w1, const Variable& b1, const Variable& w2,
                      const Variable& b2, b::UnaryOp act) {
  const char* op = "feed_forward";
  ROTA_CHECK(b1.defined() && b2.defined(), "{}: both biases are required", op);
  ROTA_CHECK(b::derivative_needs_only_input(act),
             "{}: activation {} is not supported (relu, gelu, gelu_tanh, silu)", op,
             b::unary_op_name(act));
  ROTA_CHECK(x.dim() >= 1 && w1.dim() == 2 && w2.dim() == 2 && x.size(-1) == w1.size(1) &&
                 w2.size(1) == w1.size(0),
             "{}: x {}, w1 {}, w2 {}: expected [..., E], [H, E], [E', H]", op, shape_str(x.shape()),
             shape_str(w1.shape()), shape_str(w2.shape()));
  const std::vector<Variable> inputs{x, w1, b1, w2, b2};
  const OpRecord rec = inspect_inputs(inputs);
  const bool bf16 = product_in_bf16(x.data(), w1.data()) && w2.dtype() == DType::kF32;
  const bool native = bf16 && bf16_matmul_native();
  const Tensor x_in = bf16 ? round_to_bf16_operand(x.data()) : x.data();
  const Tensor w1_in = bf16 ? round_to_bf16_operand(w1.data()) : w1.data();
  const Tensor w2_in = bf16 ? round_to_bf16_operand(w2.data()) : w2.data();
  const Tensor h = b::linear(x_in, w1_in, b1.data());  // [..., H] pre-activation
  // What the second product multiplies: act(h) in bf16 straight away (native), else the f32
  // activation (rounded on the portable bf16 path).
  Tensor a_in;
  if (native) {
    a_in = b::activation_to_bf16(act, h);
  } else {
    a_in = b::unary(act, h);
    if (bf16) a_in = round_to_bf16_operand(a_in);
  }
  Tensor y = b::linear(a_in, w2_in, b2.data());
  if (!rec.any) return Variable(std::move(y), false);

  const int64_t rows = h.numel() / h.size(-1);
  const int64_t e_in = w1.size(1), hidden = w1.size(0), e_out = w2.size(0);
  const bool need_first = rec.needs[0] || rec.needs[1] || rec.needs[2];
  return record_op(op, std::move(y), inputs,
                   [needs = rec.needs, need_first, act, bf16, native, h, a_in, x_in, w1_in, w2_in,
                    shape_x = x.shape(), rows, e_in, hidden, e_out](const Tensor& grad) {
                     std::vector<Tensor> grads(5);
                     // Second product, as linear's backward: dy [R, E'] rounded once (with db2
                     // fused).
                     const Tensor dy = grad.reshape({rows, e_out});
                     Tensor dy_in;
                     if (native && needs[4] && dy.is_contiguous()) {
                       b::Bf16WithColumnSums fused = b::to_bf16_with_column_sums(dy);
                       dy_in = std::move(fused.values);
                       grads[4] = std::move(fused.column_sums);
                     } else {
                       dy_in = bf16 ? round_to_bf16_operand(dy) : dy;
                       if (needs[4]) grads[4] = b::reduce_sum(dy, {0}, /*keepdim=*/false);
                     }
                     // dW2 = dyᵀ·a: [E', H]
                     if (needs[3])
                       grads[3] = b::matmul_weight_gradient(dy_in, a_in.reshape({rows, hidden}));
                     if (!need_first) return grads;
                     // da = dy·W2: [R, H]; then the first product as linear_activation's backward.
                     const Tensor da = b::matmul(dy_in, w2_in);
                     const Tensor h2 = h.reshape({rows, hidden});
                     Tensor dh;
                     if (h2.dtype() == DType::kF32) {
                       b::ActivationBackward fused =
                           b::activation_backward_with_column_sums(act, h2, da, native);
                       dh = bf16 && !native ? round_to_bf16_operand(fused.grad_input)
                                            : std::move(fused.grad_input);
                       if (needs[2]) grads[2] = std::move(fused.column_sums);
                     } else {  // f64 (gradient checks): the composed ops
                       const Tensor dh_full = b::unary_backward(act, h2, h2, da);
                       if (needs[2]) grads[2] = b::reduce_sum(dh_full, {0}, /*keepdim=*/false);
                       dh = dh_full;
                     }
                     // dx = dh·W1: [R, E]; dW1 = dhᵀ·x: [H, E].
                     if (needs[0]) grads[0] = b::matmul(dh, w1_in).reshape(shape_x);
                     if (needs[1])
                       grads[1] = b::matmul_weight_gradient(dh, x_in.reshape({rows, e_in}));
                     return grads;
                   });
}

Variable gated_activation(const Variable& gu, b::UnaryOp act) {
  const char* op = "gated_activation";
  ROTA_CHECK(gu.dim() >= 1 && gu.size(-1) % 2 == 0 && gu.size(-1) > 0,
             "{}: input {} must end in an even width 2H (gate then up)", op, shape_str(gu.shape()));
  const int64_t hidden = gu.size(-1) / 2;
  const int64_t rows = gu.numel() / gu.size(-1);
  Shape out_shape = gu.shape();
  out_shape.back() = hidden;
  const Tensor gu2 = gu.data().reshape({rows, 2 * hidden});     // [R, 2H]
  Tensor y = b::gated_activation(act, gu2).reshape(out_shape);  // [..., H]
  const std::vector<Variable> inputs{gu};
  if (!inspect_inputs(inputs).any) return Variable(std::move(y), false);
  return record_op(
      op, std::move(y), inputs, [act, gu2, rows, hidden, shape = gu.shape()](const Tensor& grad) {
        // grad [..., H] → dgu [R, 2H] → [..., 2H]
        const Tensor dy = grad.reshape({rows, hidden});
        return std::vector<Tensor>{b::gated_activation_backward(act, gu2, dy).reshape(shape)};
      });
}

}  // namespace rota
