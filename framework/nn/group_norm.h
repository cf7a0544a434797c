// Group normalisation over the last dim: each of G contiguous groups normalised on its own.
#pragma once

#include "framework/nn/module.h"

namespace rota::nn {

struct GroupNormOptions {
  int64_t dim = 0;     // E, the last dim; a multiple of groups
  int64_t groups = 1;  // G; each group has E / G channels
  double eps = 1e-5;
  DType dtype = DType::kF32;
  bool bias = true;  // the per-channel shift (a model's `bias: false` drops it)
};

/// x: [..., E] viewed as [..., G, E/G]; each group is normalised to zero mean and unit
/// (biased) variance, then y = x̂ · weight + bias with weight, bias [E] (RetNet's per-head
/// GroupNorm on the concatenated heads). Parameters: `weight` [E] (ones), `bias` [E] (zeros;
/// absent without bias).
class GroupNorm : public Module {
 public:
  std::optional<ParameterRole> parameter_role() const override { return ParameterRole::kNorm; }
  explicit GroupNorm(const GroupNormOptions& options);
  Variable forward(const Variable& x) const;

 private:
  GroupNormOptions options_;
  Variable weight_;
  Variable bias_;
};

}  // namespace rota::nn
