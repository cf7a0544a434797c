// Linear layer: y = x Wᵀ + b with PyTorch's weight layout [out, in].
#pragma once

#include <vector>

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

/// Several Linear layers applied to the same x, computed as one product:
/// [y_1, ..., y_L] = split(x·[W_1; ...; W_L]ᵀ + [b_1; ...; b_L]). Same values as calling each
/// layer's forward (up to the order oneDNN sums in), but x is read — and, under bf16, rounded —
/// once, the product is wider, and the backward's dx is one product instead of L plus L−1
/// additions. The layers must share in_features and all have a bias or none.
std::vector<Variable> forward_shared_input(const std::vector<const Linear*>& layers,
                                           const Variable& x);

}  // namespace rota::nn
