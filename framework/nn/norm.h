// Normalisation layers over the last dim: LayerNorm and RMSNorm.
#pragma once

#include "framework/nn/module.h"

namespace rota::nn {

struct NormOptions {
  int64_t dim = 0;
  double eps = 1e-5;
  bool affine = true;  // learnable weight (ones) and, for LayerNorm, bias (zeros)
  DType dtype = DType::kF32;
};

/// y = (x − mean) / sqrt(var + eps) · weight + bias over the last dim.
/// Parameters: `weight` [dim], `bias` [dim].
class LayerNorm : public Module {
 public:
  std::optional<ParameterRole> parameter_role() const override { return ParameterRole::kNorm; }
  explicit LayerNorm(const NormOptions& options);
  Variable forward(const Variable& x) const;

 private:
  NormOptions options_;
  Variable weight_;
  Variable bias_;
};

/// y = x / sqrt(mean(x²) + eps) · weight over the last dim. Parameter: `weight` [dim].
class RMSNorm : public Module {
 public:
  std::optional<ParameterRole> parameter_role() const override { return ParameterRole::kNorm; }
  explicit RMSNorm(const NormOptions& options);
  Variable forward(const Variable& x) const;

 private:
  NormOptions options_;
  Variable weight_;
};

}  // namespace rota::nn
