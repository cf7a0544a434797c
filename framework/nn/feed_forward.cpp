// Feed-forward block and activation selection by name.
#include "framework/nn/feed_forward.h"

#include "framework/autograd/ops/elementwise.h"
#include "framework/autograd/ops/feed_forward.h"
#include "framework/autograd/ops/matmul.h"
#include "framework/autograd/ops/shape.h"

namespace rota::nn {

Activation parse_activation(const std::string& name) {
  if (name == "relu") return Activation::kRelu;
  if (name == "gelu") return Activation::kGelu;
  if (name == "gelu_tanh") return Activation::kGeluTanh;
  if (name == "silu") return Activation::kSilu;
  if (name == "swiglu") return Activation::kSwiglu;
  if (name == "geglu") return Activation::kGeglu;
  fail("activation: unknown name '{}' (expected relu, gelu, gelu_tanh, silu, swiglu or geglu)",
       name);
}

bool is_gated(Activation activation) {
  return activation == Activation::kSwiglu || activation == Activation::kGeglu;
}

Variable apply_activation(Activation activation, const Variable& x) {
  switch (activation) {
    case Activation::kRelu:
      return relu(x);
    case Activation::kGelu:
      return gelu(x, false);
    case Activation::kGeluTanh:
      return gelu(x, true);
    case Activation::kSilu:
      return silu(x);
    case Activation::kSwiglu:
    case Activation::kGeglu:
      break;
  }
  fail("apply_activation: {} is gated and needs the gate and the up projection",
       activation == Activation::kSwiglu ? "swiglu" : "geglu");
}

FeedForward::FeedForward(const FeedForwardOptions& options, Generator& init_gen,
                         std::shared_ptr<Generator> dropout_gen)
    : options_(options) {
  const LinearOptions first{options.dim, options.hidden_dim, options.bias, options.dtype,
                            options.first_init};
  const LinearOptions second{options.hidden_dim, options.dim, options.bias, options.dtype,
                             options.second_init};
  const bool gated = is_gated(options.activation);
  fc1_ = register_module(gated ? "gate_proj" : "fc1", std::make_shared<Linear>(first, init_gen));
  if (gated) up_ = register_module("up_proj", std::make_shared<Linear>(first, init_gen));
  fc2_ = register_module(gated ? "down_proj" : "fc2", std::make_shared<Linear>(second, init_gen));
  dropout_ = register_module("dropout", std::make_shared<Dropout>(options.dropout, dropout_gen));
}

namespace {

backend::UnaryOp activation_op(Activation activation) {
  switch (activation) {
    case Activation::kRelu:
      return backend::UnaryOp::kRelu;
    case Activation::kGelu:
      return backend::UnaryOp::kGeluErf;
    case Activation::kGeluTanh:
      return backend::UnaryOp::kGeluTanh;
    case Activation::kSilu:
    case Activation::kSwiglu:
      return backend::UnaryOp::kSilu;
    case Activation::kGeglu:
      return backend::UnaryOp::kGeluErf;
  }
  fail("activation: unknown value {}", static_cast<int>(activation));
}

}  // namespace

Variable FeedForward::forward(const Variable& x) const {
  ROTA_CHECK(x.dim() >= 1 && x.size(-1) == options_.dim,
             "FeedForward: input {} does not end in dim = {}", shape_str(x.shape()), options_.dim);
  const backend::UnaryOp act = activation_op(options_.activation);
  if (fc1_->has_lora() || fc2_->has_lora() || (up_ && up_->has_lora())) {
    // Low-rank adapters: each layer's own forward (its adapter's term included), composed.
    if (up_) {
      const Variable gu = concat({fc1_->forward(x), up_->forward(x)}, -1);  // [..., 2H]
      return fc2_->forward(dropout_->forward(gated_activation(gu, act)));
    }
    const Variable hidden = apply_activation(options_.activation, fc1_->forward(x));  // [..., H]
    return fc2_->forward(dropout_->forward(hidden));
  }
  if (up_) {
    if (!dropout_->active()) {
      // Both products and the gated activation as one op (same values as the steps below).
      return gated_feed_forward(x, fc1_->weight(), fc1_->bias(), up_->weight(), up_->bias(),
                                fc2_->weight(), fc2_->bias(), act);
    }
    // [gate | up] as one product x·[W_gate; W_up]ᵀ [..., 2H], the gated activation in one fused
    // pass [..., H], dropout, down_proj.
    const Variable gu = linear(x, concat({fc1_->weight(), up_->weight()}, 0),
                               options_.bias ? concat({fc1_->bias(), up_->bias()}, 0) : Variable());
    return fc2_->forward(dropout_->forward(gated_activation(gu, act)));
  }
  if (!options_.bias) {
    // No biases: the fused ops with constant zero biases (no gradient is formed for them).
    const Variable b1(zeros({options_.hidden_dim}, fc1_->weight().dtype()), false);
    if (!dropout_->active()) {
      const Variable b2(zeros({options_.dim}, fc2_->weight().dtype()), false);
      return feed_forward(x, fc1_->weight(), b1, fc2_->weight(), b2, act);
    }
    return fc2_->forward(dropout_->forward(linear_activation(x, fc1_->weight(), b1, act)));
  }
  if (!dropout_->active()) {
    // Both products and the activation as one op (same values as the layers one by one).
    return feed_forward(x, fc1_->weight(), fc1_->bias(), fc2_->weight(), fc2_->bias(), act);
  }
  // fc1 and the activation as one op, dropout, fc2.
  const Variable hidden = linear_activation(x, fc1_->weight(), fc1_->bias(), act);
  return fc2_->forward(dropout_->forward(hidden));
}

}  // namespace rota::nn
