// Fused LM-head loss op: gradients computed in the forward pass, scaled in the backward.
#include "framework/autograd/ops/linear_cross_entropy.h"

#include "framework/autograd/function.h"
#include "framework/autograd/precision.h"
#include "framework/backend/fused/linear_cross_entropy.h"
#include "framework/backend/primitives/elementwise.h"

namespace rota {

namespace b = backend;

namespace {

// grad·g for the scalar incoming gradient g (no copy when g is 1).
Tensor scaled(const Tensor& grad, double g) {
  if (!grad.defined() || g == 1.0) return grad;
  return b::unary(b::UnaryOp::kMulScalar, grad, g);
}

}  // namespace

Variable linear_cross_entropy(const Variable& hidden, const Variable& weight, const Variable& bias,
                              const Tensor& targets, int64_t ignore_index, double label_smoothing,
                              Reduction reduction) {
  ROTA_CHECK(hidden.defined() && weight.defined(),
             "linear_cross_entropy: undefined hidden or weight");
  const bool has_bias = bias.defined();
  const std::vector<Variable> inputs = has_bias ? std::vector<Variable>{hidden, weight, bias}
                                                : std::vector<Variable>{hidden, weight};
  const OpRecord rec = inspect_inputs(inputs);
  b::LinearCrossEntropyOptions options;
  options.ignore_index = ignore_index;
  options.label_smoothing = label_smoothing;
  options.reduction = reduction;
  options.grad_hidden = rec.needs[0];
  options.grad_weight = rec.needs[1];
  options.grad_bias = has_bias && rec.needs[2];

  // Under kBF16, f32 operands are rounded once here (not per tile); the bias stays f32.
  const bool bf16 = product_in_bf16(hidden.data(), weight.data());
  options.round_dlogits_to_bf16 = bf16;
  const Tensor hidden_in = bf16 ? round_to_bf16_operand(hidden.data()) : hidden.data();
  const Tensor weight_in = bf16 ? round_to_bf16_operand(weight.data()) : weight.data();
  b::LinearCrossEntropyResult result = b::linear_cross_entropy(
      hidden_in, weight_in, has_bias ? bias.data() : Tensor(), targets, options);
  if (!rec.any) return Variable(std::move(result.loss), false);

  return record_op(
      "linear_cross_entropy", result.loss, inputs,
      [grad_hidden = std::move(result.grad_hidden), grad_weight = std::move(result.grad_weight),
       grad_bias = std::move(result.grad_bias), has_bias](const Tensor& grad) {
        const double g = grad.item();
        std::vector<Tensor> grads{scaled(grad_hidden, g), scaled(grad_weight, g)};
        if (has_bias) grads.push_back(scaled(grad_bias, g));
        return grads;
      });
}

}  // namespace rota
