// LayerNorm and RMSNorm layers (fused kernels underneath).
#include "framework/nn/norm.h"

#include "framework/autograd/ops/norm.h"

namespace rota::nn {

namespace {
void check_input(const char* op, const Variable& x, int64_t dim) {
  ROTA_CHECK(x.dim() >= 1 && x.size(-1) == dim, "{}: input {} does not end in dim = {}", op,
             shape_str(x.shape()), dim);
}
}  // namespace

LayerNorm::LayerNorm(const NormOptions& options) : options_(options) {
  ROTA_CHECK(options.dim > 0, "LayerNorm: dim must be positive, got {}", options.dim);
  if (options.affine) {
    weight_ = register_parameter("weight", ones({options.dim}, options.dtype));
    if (options.bias) bias_ = register_parameter("bias", zeros({options.dim}, options.dtype));
  }
}

Variable LayerNorm::forward(const Variable& x) const {
  check_input("LayerNorm", x, options_.dim);
  return layer_norm(x, weight_, bias_, options_.eps);
}

RMSNorm::RMSNorm(const NormOptions& options) : options_(options) {
  ROTA_CHECK(options.dim > 0, "RMSNorm: dim must be positive, got {}", options.dim);
  if (options.affine) weight_ = register_parameter("weight", ones({options.dim}, options.dtype));
}

Variable RMSNorm::forward(const Variable& x) const {
  check_input("RMSNorm", x, options_.dim);
  return rms_norm(x, weight_, options_.eps);
}

std::shared_ptr<Norm> make_norm(NormKind kind, const NormOptions& options) {
  if (kind == NormKind::kRmsNorm) return std::make_shared<RMSNorm>(options);
  return std::make_shared<LayerNorm>(options);
}

}  // namespace rota::nn
