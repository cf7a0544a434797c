// matmul / linear ops: backward as two more products, transposes passed as flags; bf16 compute.
#include "framework/autograd/ops/matmul.h"

#include "framework/autograd/function.h"
#include "framework/autograd/precision.h"
#include "framework/backend/fused/fused_activation.h"
#include "framework/backend/primitives/convert.h"
#include "framework/backend/primitives/elementwise.h"
#include "framework/backend/primitives/matmul.h"
#include "framework/backend/primitives/reduce.h"

namespace rota {

namespace b = backend;

namespace {

Shape leading_dims(const Shape& shape, size_t trailing) {
  return Shape(shape.begin(), shape.end() - static_cast<int64_t>(trailing));
}

// What the products multiply: the operand itself, or its bf16 rounding (cast once, then used
// by the forward and saved for the backward: half the bytes of the f32 original).
Tensor compute_operand(const Tensor& t, bool bf16) {
  return bf16 ? round_to_bf16_operand(t) : t;
}

}  // namespace

Variable matmul(const Variable& a, const Variable& bv, bool transpose_a, bool transpose_b) {
  const OpRecord rec = inspect_inputs({a, bv});
  const bool bf16 = product_in_bf16(a.data(), bv.data());
  const Tensor a_in = compute_operand(a.data(), bf16);
  const Tensor b_in = compute_operand(bv.data(), bf16);
  Tensor out = b::matmul(a_in, b_in, transpose_a, transpose_b);
  if (!rec.any) return Variable(std::move(out), false);

  // The backward works on the promoted operands the forward used: a2 [..., M, K] stored as
  // [..., K, M] when ta, b2 [..., K, N] stored as [..., N, K] when tb (1-D a is [1, K], 1-D b
  // is [K, 1]; flags do not apply to 1-D operands). Under bf16 they are the rounded copies.
  const Tensor a2 = a.dim() == 1 ? a_in.unsqueeze(0) : a_in;
  const Tensor b2 = bv.dim() == 1 ? b_in.unsqueeze(1) : b_in;
  const bool ta = transpose_a && a.dim() >= 2;
  const bool tb = transpose_b && bv.dim() >= 2;
  const int64_t m = ta ? a2.size(-1) : a2.size(-2);
  const int64_t n = tb ? b2.size(-2) : b2.size(-1);
  Shape full_out =
      broadcast_shapes(leading_dims(a2.shape(), 2), leading_dims(b2.shape(), 2), "matmul");
  full_out.push_back(m);
  full_out.push_back(n);

  return record_op(
      "matmul", out, {a, bv},
      [needs = rec.needs, ad = rec.needs[1] ? a2 : Tensor(), bd = rec.needs[0] ? b2 : Tensor(), ta,
       tb, bf16, full_out, shape_a = a.shape(), shape_b = bv.shape(), a2_shape = a2.shape(),
       b2_shape = b2.shape()](const Tensor& grad) {
        // C = op(A)·op(B), g = dL/dC: [batch..., M, N]. Under bf16 g is rounded once and both
        // products multiply bf16 by bf16 into f32 gradients.
        const Tensor g = compute_operand(grad, bf16).reshape(full_out);
        Tensor ga;
        Tensor gb;
        if (needs[0]) {
          // dop(A) = g·op(B)ᵀ; stored transposed (ta): dA = op(B)·gᵀ.
          const Tensor d = ta ? b::matmul(bd, g, tb, true) : b::matmul(g, bd, false, !tb);
          ga = b::sum_to_shape(d, a2_shape).reshape(shape_a);
        }
        if (needs[1]) {
          Tensor d;
          if (b2_shape.size() == 2 && a2_shape.size() > 2 && !ta) {
            // b has no batch dims: Σ over the batch of A_iᵀ·g_i is one product over the
            // flattened rows (K = batch·M), far better for the GEMM than a batch of small
            // products followed by a reduction.
            const int64_t rows = shape_numel(leading_dims(full_out, 1));
            const Tensor a_rows = ad.reshape({rows, a2_shape.back()});
            const Tensor g_rows = g.reshape({rows, full_out.back()});
            d = tb ? b::matmul(g_rows, a_rows, true, false)
                   : b::matmul(a_rows, g_rows, true, false);
          } else {
            // dop(B) = op(A)ᵀ·g; stored transposed (tb): dB = gᵀ·op(A).
            d = tb ? b::matmul(g, ad, true, ta) : b::matmul(ad, g, !ta, false);
          }
          gb = b::sum_to_shape(d, b2_shape).reshape(shape_b);
        }
        return std::vector<Tensor>{ga, gb};
      });
}

Variable linear(const Variable& x, const Variable& weight, const Variable& bias) {
  const bool has_bias = bias.defined();
  const std::vector<Variable> inputs =
      has_bias ? std::vector<Variable>{x, weight, bias} : std::vector<Variable>{x, weight};
  const OpRecord rec = inspect_inputs(inputs);
  const bool bf16 = product_in_bf16(x.data(), weight.data());
  const Tensor x_in = compute_operand(x.data(), bf16);
  const Tensor w_in = compute_operand(weight.data(), bf16);
  // The bias stays f32 either way: oneDNN adds it to the f32 accumulator.
  Tensor out = b::linear(x_in, w_in, has_bias ? bias.data() : Tensor());
  if (!rec.any) return Variable(std::move(out), false);

  const int64_t in_features = weight.size(1);
  const int64_t out_features = weight.size(0);
  const int64_t rows = shape_numel(leading_dims(x.shape(), 1));
  return record_op("linear", out, inputs,
                   [needs = rec.needs, has_bias, bf16, xd = rec.needs[1] ? x_in : Tensor(),
                    wd = rec.needs[0] ? w_in : Tensor(), shape_x = x.shape(), in_features,
                    out_features, rows](const Tensor& grad) {
                     // Over the flattened rows: x: [R, In], W: [Out, In], g: [R, Out]. Under bf16,
                     // x and W are the saved rounded copies and g is rounded once for both
                     // products.
                     const Tensor g = grad.reshape({rows, out_features});
                     std::vector<Tensor> grads(has_bias ? 3 : 2);
                     Tensor g_in;
                     if (bf16 && has_bias && needs[2] && g.is_contiguous()) {
                       // One pass over g for both its bf16 rounding and db = Σ_r g[r, :] (same
                       // bits).
                       const b::Bf16Rounding rounding = bf16_operand_rounding(true);
                       b::Bf16WithColumnSums fused = b::to_bf16_with_column_sums(g, rounding);
                       g_in = std::move(fused.values);
                       grads[2] = std::move(fused.column_sums);
                     } else {
                       g_in = compute_operand(g, bf16);
                       // db = Σ_r g[r, :]: [Out], from the f32 gradient.
                       if (has_bias && needs[2])
                         grads[2] = b::reduce_sum(g, {0}, /*keepdim=*/false);
                     }
                     // dx = g·W: [R, In].
                     if (needs[0]) grads[0] = b::matmul(g_in, wd).reshape(shape_x);
                     // dW = gᵀ·x: [Out, In] (matmul_weight_gradient picks the faster orientation).
                     if (needs[1]) {
                       grads[1] = b::matmul_weight_gradient(g_in, xd.reshape({rows, in_features}));
                     }
                     return grads;
                   });
}

Variable linear_activation(const Variable& x, const Variable& weight, const Variable& bias,
                           b::UnaryOp act) {
  ROTA_CHECK(bias.defined(), "linear_activation: a bias is required (use linear + activation)");
  ROTA_CHECK(b::derivative_needs_only_input(act),
             "linear_activation: activation {} is not supported (relu, gelu, gelu_tanh, silu)",
             b::unary_op_name(act));
  const std::vector<Variable> inputs{x, weight, bias};
  const OpRecord rec = inspect_inputs(inputs);
  const bool bf16 = product_in_bf16(x.data(), weight.data());
  const Tensor x_in = compute_operand(x.data(), bf16);
  const Tensor w_in = compute_operand(weight.data(), bf16);
  const Tensor h = b::linear(x_in, w_in, bias.data());  // pre-activation, f32 (or f64)
  Tensor y = b::unary(act, h);
  if (!rec.any) return Variable(std::move(y), false);

  const int64_t in_features = weight.size(1);
  const int64_t out_features = weight.size(0);
  const int64_t rows = shape_numel(leading_dims(x.shape(), 1));
  return record_op(
      "linear_activation", std::move(y), inputs,
      [needs = rec.needs, act, bf16, h, xd = rec.needs[1] ? x_in : Tensor(),
       wd = rec.needs[0] ? w_in : Tensor(), shape_x = x.shape(), in_features, out_features,
       rows](const Tensor& grad) {
        // Rows flattened: h, dy, dh: [R, Out]; x: [R, In]; W: [Out, In].
        const Tensor h2 = h.reshape({rows, out_features});
        const Tensor dy = grad.reshape({rows, out_features});
        std::vector<Tensor> grads(3);
        Tensor dh;  // what the two products multiply: bf16 (native), rounded f32, or as is
        if (h2.dtype() == DType::kF32) {
          b::ActivationBackward fused =
              b::activation_backward_with_column_sums(act, h2, dy, bf16_operand_rounding(bf16));
          dh = std::move(fused.grad_input);
          grads[2] = std::move(fused.column_sums);
        } else {  // f64 (gradient checks): the composed ops
          const Tensor dh_full = b::unary_backward(act, h2, h2, dy);
          grads[2] = b::reduce_sum(dh_full, {0}, /*keepdim=*/false);
          dh = dh_full;
        }
        if (!needs[2]) grads[2] = Tensor();
        // dx = dh·W: [R, In]; dW = dhᵀ·x: [Out, In].
        if (needs[0]) grads[0] = b::matmul(dh, wd).reshape(shape_x);
        if (needs[1]) grads[1] = b::matmul_weight_gradient(dh, xd.reshape({rows, in_features}));
        return grads;
      });
}

}  // namespace rota
