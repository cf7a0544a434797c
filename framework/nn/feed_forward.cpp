// Feed-forward block and activation selection by name.
#include "framework/nn/feed_forward.h"

#include "framework/autograd/ops/elementwise.h"

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
                                                    options.dtype, options.init_std},
                                      init_gen));
  fc2_ = register_module(
      "fc2", std::make_shared<Linear>(LinearOptions{options.hidden_dim, options.dim, true,
                                                    options.dtype, options.init_std},
                                      init_gen));
  dropout_ = register_module("dropout", std::make_shared<Dropout>(options.dropout, dropout_gen));
}

Variable FeedForward::forward(const Variable& x) const {
  return fc2_->forward(dropout_->forward(apply_activation(options_.activation, fc1_->forward(x))));
}

}  // namespace rota::nn
