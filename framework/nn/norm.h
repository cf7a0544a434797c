// Normalisation layers over the last dim: LayerNorm and RMSNorm.
#pragma once

#include <memory>

#include "framework/nn/module.h"

namespace rota::nn {

struct NormOptions {
  int64_t dim = 0;
  double eps = 1e-5;
  bool affine = true;  // learnable weight (ones) and, for LayerNorm, bias (zeros)
  DType dtype = DType::kF32;
  bool bias = true;  // LayerNorm with affine: the bias β (false: weight only). RMSNorm has none.
};

/// The two kinds of norm a model's blocks can use.
enum class NormKind { kLayerNorm, kRmsNorm };

/// A normalisation over the last dim (LayerNorm or RMSNorm), for models choosing by NormKind.
class Norm : public Module {
 public:
  std::optional<ParameterRole> parameter_role() const override { return ParameterRole::kNorm; }
  /// x: [..., dim] → [..., dim].
  virtual Variable forward(const Variable& x) const = 0;
};

/// y = (x − mean) / sqrt(var + eps) · weight + bias over the last dim.
/// Parameters: `weight` [dim], `bias` [dim] (unless options.bias is false).
class LayerNorm : public Norm {
 public:
  explicit LayerNorm(const NormOptions& options);
  Variable forward(const Variable& x) const override;

 private:
  NormOptions options_;
  Variable weight_;
  Variable bias_;
};

/// y = x / sqrt(mean(x²) + eps) · weight over the last dim. Parameter: `weight` [dim].
class RMSNorm : public Norm {
 public:
  explicit RMSNorm(const NormOptions& options);
  Variable forward(const Variable& x) const override;

 private:
  NormOptions options_;
  Variable weight_;
};

/// A LayerNorm or an RMSNorm of `options` (RMSNorm ignores options.bias).
std::shared_ptr<Norm> make_norm(NormKind kind, const NormOptions& options);

}  // namespace rota::nn
