// Feed-forward block and activation selection by name.
#include "framework/nn/feed_forward.h"

#include "framework/autograd/ops/elementwise.h"
#include "framework/autograd/ops/feed_forward.h"
#include "framework/autograd/ops/matmul.h"

namespace rota::nn {

Activation parse_activation(const std::string& name) {
  if (name == "relu") return Activation::kRelu;
  if (name == "gelu") return Activation::kGelu;
  if (name == "gelu_tanh") return Activation::kGeluTanh;
  if (name == "silu") return Activation::kSilu;
  fail("activation: unknown name '{}' (expected relu, gelu, gelu_tanh or silu)", name);
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
  }
  return x;
}

FeedForward::FeedForward(const FeedForwardOptions& options, Generator& init_gen,
                         std::shared_ptr<Generator> dropout_gen)
    : options_(options) {
  fc1_ = register_module(
      "fc1", std::make_shared<Linear>(LinearOptions{options.dim, options.hidden_dim, true,
                                                    options.dtype, options.first_init},
                                      init_gen));
  fc2_ = register_module(
      "fc2", std::make_shared<Linear>(LinearOptions{options.hidden_dim, options.dim, true,
                                                    options.dtype, options.second_init},
                                      init_gen));
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
      return backend::UnaryOp::kSilu;
  }
  fail("activation: unknown value {}", static_cast<int>(activation));
}

}  // namespace

Variable FeedForward::forward(const Variable& x) const {
  ROTA_CHECK(x.dim() >= 1 && x.size(-1) == options_.dim,
             "FeedForward: input {} does not end in dim = {}", shape_str(x.shape()), options_.dim);
  const backend::UnaryOp act = activation_op(options_.activation);
  if (!dropout_->active()) {
    // Both products and the activation as one op (same values as the layers one by one).
    return feed_forward(x, fc1_->weight(), fc1_->bias(), fc2_->weight(), fc2_->bias(), act);
  }
  // fc1 and the activation as one op, dropout, fc2.
  const Variable hidden = linear_activation(x, fc1_->weight(), fc1_->bias(), act);
  return fc2_->forward(dropout_->forward(hidden));
}

}  // namespace rota::nn
