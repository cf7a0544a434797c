// feed_forward op: forward through one fused activation pass, backward through the fused
// gradient passes of backend/fused_activation.h and convert.h.
#include "framework/autograd/ops/feed_forward.h"

#include "framework/autograd/function.h"
#include "framework/autograd/precision.h"
#include "framework/backend/fused/fused_activation.h"
#include "framework/backend/fused/gated_activation.h"
#include "framework/backend/primitives/convert.h"
#include "framework/backend/primitives/indexing.h"
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
  const b::Bf16Rounding rounding = bf16_operand_rounding(bf16);
  const Tensor x_in = bf16 ? round_to_bf16_operand(x.data()) : x.data();
  const Tensor w1_in = bf16 ? round_to_bf16_operand(w1.data()) : w1.data();
  const Tensor w2_in = bf16 ? round_to_bf16_operand(w2.data()) : w2.data();
  const Tensor h = b::linear(x_in, w1_in, b1.data());  // [..., H] pre-activation
  // What the second product multiplies: act(h) rounded in the same pass under bf16 (a bf16
  // tensor, or bf16 values in f32 on the portable path), else the f32 activation.
  const Tensor a_in = bf16 ? b::activation_to_bf16(act, h, rounding) : b::unary(act, h);
  Tensor y = b::linear(a_in, w2_in, b2.data());
  if (!rec.any) return Variable(std::move(y), false);

  const int64_t rows = h.numel() / h.size(-1);
  const int64_t e_in = w1.size(1), hidden = w1.size(0), e_out = w2.size(0);
  const bool need_first = rec.needs[0] || rec.needs[1] || rec.needs[2];
  return record_op(op, std::move(y), inputs,
                   [needs = rec.needs, need_first, act, bf16, rounding, h, a_in, x_in, w1_in, w2_in,
                    shape_x = x.shape(), rows, e_in, hidden, e_out](const Tensor& grad) {
                     std::vector<Tensor> grads(5);
                     // Second product, as linear's backward: dy [R, E'] rounded once (with db2
                     // fused).
                     const Tensor dy = grad.reshape({rows, e_out});
                     Tensor dy_in;
                     if (bf16 && needs[4] && dy.is_contiguous()) {
                       b::Bf16WithColumnSums fused = b::to_bf16_with_column_sums(dy, rounding);
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
                           b::activation_backward_with_column_sums(act, h2, da, rounding);
                       dh = std::move(fused.grad_input);
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

Variable gated_feed_forward(const Variable& x, const Variable& w_gate, const Variable& b_gate,
                            const Variable& w_up, const Variable& b_up, const Variable& w_down,
                            const Variable& b_down, b::UnaryOp act) {
  const char* op = "gated_feed_forward";
  const bool has_bias = b_gate.defined();
  ROTA_CHECK(b_up.defined() == has_bias && b_down.defined() == has_bias,
             "{}: the three biases must all be given or all be absent", op);
  ROTA_CHECK(b::derivative_needs_only_input(act), "{}: activation {} is not supported", op,
             b::unary_op_name(act));
  ROTA_CHECK(x.dim() >= 1 && w_gate.dim() == 2 && w_up.shape() == w_gate.shape() &&
                 w_down.dim() == 2 && x.size(-1) == w_gate.size(1) &&
                 w_down.size(1) == w_gate.size(0),
             "{}: x {}, w_gate {}, w_up {}, w_down {}: expected [..., E], [H, E], [H, E], [E', H]",
             op, shape_str(x.shape()), shape_str(w_gate.shape()), shape_str(w_up.shape()),
             shape_str(w_down.shape()));
  const std::vector<Variable> inputs =
      has_bias ? std::vector<Variable>{x, w_gate, w_up, w_down, b_gate, b_up, b_down}
               : std::vector<Variable>{x, w_gate, w_up, w_down};
  const OpRecord rec = inspect_inputs(inputs);
  const int64_t e_in = x.size(-1), hidden = w_gate.size(0), e_out = w_down.size(0);
  const int64_t rows = x.numel() / e_in;
  // The gate and up projections as one [2H, E] weight (a small copy per call).
  const Tensor w_gu = b::concat({w_gate.data(), w_up.data()}, 0);
  const Tensor b_gu = has_bias ? b::concat({b_gate.data(), b_up.data()}, 0) : Tensor();
  const bool bf16 = product_in_bf16(x.data(), w_gu) && w_down.dtype() == DType::kF32;
  const b::Bf16Rounding rounding = bf16_operand_rounding(bf16);
  const Tensor x_in = bf16 ? round_to_bf16_operand(x.data()) : x.data();
  const Tensor wgu_in = bf16 ? round_to_bf16_operand(w_gu) : w_gu;
  const Tensor wd_in = bf16 ? round_to_bf16_operand(w_down.data()) : w_down.data();
  // [gate | up]: [R, 2H], f32 (or f64).
  const Tensor gu = b::linear(x_in, wgu_in, b_gu).reshape({rows, 2 * hidden});
  // What the down product multiplies: the gated activation rounded in the same pass under bf16
  // (a bf16 tensor, or bf16 values in f32 on the portable path), else in f32.
  const Tensor a_in =
      bf16 ? b::gated_activation_to_bf16(act, gu, rounding) : b::gated_activation(act, gu);
  Shape out_shape = x.shape();
  out_shape.back() = e_out;
  Tensor y = b::linear(a_in, wd_in, has_bias ? b_down.data() : Tensor()).reshape(out_shape);
  if (!rec.any) return Variable(std::move(y), false);

  return record_op(
      op, std::move(y), inputs,
      [needs = rec.needs, has_bias, act, bf16, rounding, gu, a_in, x_in, wgu_in, wd_in,
       shape_x = x.shape(), rows, e_in, hidden, e_out](const Tensor& grad) {
        // Inputs: 0 x, 1 w_gate, 2 w_up, 3 w_down, then 4 b_gate, 5 b_up, 6 b_down.
        std::vector<Tensor> grads(has_bias ? 7 : 4);
        // The down product, as linear's backward: dy [R, E'] rounded once (db_down fused).
        const Tensor dy = grad.reshape({rows, e_out});
        Tensor dy_in;
        if (bf16 && has_bias && needs[6] && dy.is_contiguous()) {
          b::Bf16WithColumnSums fused = b::to_bf16_with_column_sums(dy, rounding);
          dy_in = std::move(fused.values);
          grads[6] = std::move(fused.column_sums);
        } else {
          dy_in = bf16 ? round_to_bf16_operand(dy) : dy;
          if (has_bias && needs[6]) grads[6] = b::reduce_sum(dy, {0}, /*keepdim=*/false);
        }
        // dW_down = dyᵀ·a: [E', H].
        if (needs[3]) grads[3] = b::matmul_weight_gradient(dy_in, a_in);
        const bool need_first =
            needs[0] || needs[1] || needs[2] || (has_bias && (needs[4] || needs[5]));
        if (!need_first) return grads;
        // da = dy·W_down: [R, H]; dgu = the gated activation's gradient: [R, 2H].
        const Tensor da = b::matmul(dy_in, wd_in);
        const Tensor dgu = b::gated_activation_backward(act, gu, da);
        // The [gate | up] product, as linear's backward over the stacked weight.
        Tensor dgu_in;
        Tensor db_gu;
        const bool need_db = has_bias && (needs[4] || needs[5]);
        if (bf16 && need_db) {
          b::Bf16WithColumnSums fused = b::to_bf16_with_column_sums(dgu, rounding);
          dgu_in = std::move(fused.values);
          db_gu = std::move(fused.column_sums);
        } else {
          dgu_in = bf16 ? round_to_bf16_operand(dgu) : dgu;
          if (need_db) db_gu = b::reduce_sum(dgu, {0}, /*keepdim=*/false);
        }
        if (need_db) {
          grads[4] = db_gu.narrow(0, 0, hidden).clone();
          grads[5] = db_gu.narrow(0, hidden, hidden).clone();
        }
        // dx = dgu·[W_gate; W_up]: [R, E].
        if (needs[0]) grads[0] = b::matmul(dgu_in, wgu_in).reshape(shape_x);
        // d[W_gate; W_up] = dguᵀ·x: [2H, E], split into the two weights.
        if (needs[1] || needs[2]) {
          const Tensor dw = b::matmul_weight_gradient(dgu_in, x_in.reshape({rows, e_in}));
          grads[1] = dw.narrow(0, 0, hidden).clone();
          grads[2] = dw.narrow(0, hidden, hidden).clone();
        }
        return grads;
      });
}

}  // namespace rota
