// Position-wise feed-forward block: Linear → activation → dropout → Linear.
#pragma once

#include <memory>
#include <string>

#include "framework/nn/dropout.h"
#include "framework/nn/linear.h"

namespace rota::nn {

enum class Activation { kRelu, kGelu, kGeluTanh, kSilu };

/// Parses "relu", "gelu", "gelu_tanh", "silu"; throws listing the valid names otherwise.
Activation parse_activation(const std::string& name);
Variable apply_activation(Activation activation, const Variable& x);

struct FeedForwardOptions {
  int64_t dim = 0;
  int64_t hidden_dim = 0;
  Activation activation = Activation::kGelu;
  double dropout = 0.0;
  WeightInit first_init;   // fc1 (default: PyTorch's)
  WeightInit second_init;  // fc2, which writes into the residual stream
  DType dtype = DType::kF32;
};

/// Children: `fc1` [hidden, dim], `fc2` [dim, hidden].
class FeedForward : public Module {
 public:
  FeedForward(const FeedForwardOptions& options, Generator& init_gen,
              std::shared_ptr<Generator> dropout_gen);
  /// x: [..., dim] → [..., dim].
  Variable forward(const Variable& x) const;

 private:
  FeedForwardOptions options_;
  std::shared_ptr<Linear> fc1_;
  std::shared_ptr<Linear> fc2_;
  std::shared_ptr<Dropout> dropout_;
};

}  // namespace rota::nn
