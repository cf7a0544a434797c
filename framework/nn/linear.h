// Linear layer: y = x Wᵀ + b with PyTorch's weight layout [out, in].
#pragma once

#include <vector>

#include "framework/nn/module.h"
#include "framework/tensor/random.h"

namespace rota::nn {

/// How a Linear's weight [out, in] and bias [out] start (the schemes of docs/recipes.md,
/// "Initialisation", are built from these).
struct WeightInit {
  enum class Kind {
    kPyTorch,        // weight and bias U(−1/√in, 1/√in): nn.Linear's default
    kNormal,         // weight N(0, scale²), bias 0
    kNormalFanIn,    // weight N(0, (scale/√in)²), bias 0
    kXavierUniform,  // weight U(±scale·√(6/(in+out))); bias 0, or U(±1/√in) when pytorch_bias
  };
  Kind kind = Kind::kPyTorch;
  /// kNormal: the standard deviation (> 0); kNormalFanIn: the factor on 1/√in; kXavierUniform:
  /// the gain. Unused by kPyTorch.
  double scale = 1.0;
  /// kXavierUniform only: the bias keeps nn.Linear's U(−1/√in, 1/√in) (fairseq's q/k/v).
  bool pytorch_bias = false;

  static WeightInit pytorch() { return {}; }
  static WeightInit normal(double stddev) { return {Kind::kNormal, stddev, false}; }
  static WeightInit normal_fan_in(double factor = 1.0) {
    return {Kind::kNormalFanIn, factor, false};
  }
  static WeightInit xavier_uniform(double gain, bool pytorch_bias) {
    return {Kind::kXavierUniform, gain, pytorch_bias};
  }
};

struct LinearOptions {
  int64_t in_features = 0;
  int64_t out_features = 0;
  bool bias = true;
  DType dtype = DType::kF32;
  WeightInit init{};  // default: PyTorch's
};

/// Parameters: `weight` [out, in], `bias` [out] (when enabled).
class Linear : public Module {
 public:
  Linear(const LinearOptions& options, Generator& gen);
  /// x: [..., in] → [..., out].
  Variable forward(const Variable& x) const;
  const Variable& weight() const { return weight_; }
  const Variable& bias() const { return bias_; }
  const LinearOptions& options() const { return options_; }

 private:
  LinearOptions options_;
  Variable weight_;
  Variable bias_;
};

/// Several Linear layers applied to the same x, computed as one product:
/// [y_1, ..., y_L] = split(x·[W_1; ...; W_L]ᵀ + [b_1; ...; b_L]). Same values as calling each
/// layer's forward (up to the order oneDNN sums in), but x is read — and, under bf16, rounded —
/// once, the product is wider, and the backward's dx is one product instead of L plus L−1
/// additions. The layers must share in_features and all have a bias or none.
std::vector<Variable> forward_shared_input(const std::vector<const Linear*>& layers,
                                           const Variable& x);

}  // namespace rota::nn
