// Linear layer: y = x Wᵀ + b with PyTorch's weight layout [out, in].
#pragma once

#include "framework/nn/module.h"
#include "framework/tensor/random.h"

namespace rota::nn {

struct LinearOptions {
  int64_t in_features = 0;
  int64_t out_features = 0;
  bool bias = true;
  DType dtype = DType::kF32;
  /// Standard deviation of a normal(0, std) weight init; 0 keeps PyTorch's default
  /// U(−1/√in, 1/√in) for the weight and the bias. Biases start at zero when std > 0.
  double init_std = 0.0;
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

}  // namespace rota::nn
