// Position-wise feed-forward block: Linear → activation → dropout → Linear, or gated (SwiGLU,
// GeGLU): (act(x·W_gateᵀ) ⊙ x·W_upᵀ) → dropout → W_down.
#pragma once

#include <memory>
#include <string>

#include "framework/nn/dropout.h"
#include "framework/nn/linear.h"

namespace rota::nn {

/// The feed-forward activation. kSwiglu and kGeglu are gated (Shazeer 2020): the block has three
/// projections and computes (act(x·W_gateᵀ) ⊙ (x·W_upᵀ))·W_downᵀ with act silu / exact gelu.
enum class Activation { kRelu, kGelu, kGeluTanh, kSilu, kSwiglu, kGeglu };

/// True for kSwiglu and kGeglu.
bool is_gated(Activation activation);

/// Parses "relu", "gelu", "gelu_tanh", "silu", "swiglu", "geglu"; throws listing the valid names
/// otherwise.
Activation parse_activation(const std::string& name);
/// act(x) for the ungated activations; throws for kSwiglu and kGeglu (they need two inputs).
Variable apply_activation(Activation activation, const Variable& x);

struct FeedForwardOptions {
  int64_t dim = 0;
  int64_t hidden_dim = 0;
  Activation activation = Activation::kGelu;
  double dropout = 0.0;
  WeightInit first_init;   // fc1, or gate_proj and up_proj (default: PyTorch's)
  WeightInit second_init;  // fc2 or down_proj, which writes into the residual stream
  DType dtype = DType::kF32;
  bool bias = true;  // biases of every projection
};

/// Children: `fc1` [hidden, dim], `fc2` [dim, hidden]; gated activations: `gate_proj`,
/// `up_proj` [hidden, dim] and `down_proj` [dim, hidden] (LLaMA's names), created in that order.
class FeedForward : public Module {
 public:
  FeedForward(const FeedForwardOptions& options, Generator& init_gen,
              std::shared_ptr<Generator> dropout_gen);
  /// x: [..., dim] → [..., dim].
  Variable forward(const Variable& x) const;

 private:
  FeedForwardOptions options_;
  std::shared_ptr<Linear> fc1_;  // fc1, or gate_proj when gated
  std::shared_ptr<Linear> up_;   // up_proj (gated only)
  std::shared_ptr<Linear> fc2_;  // fc2, or down_proj when gated
  std::shared_ptr<Dropout> dropout_;
};

}  // namespace rota::nn
