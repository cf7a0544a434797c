// GroupNorm: the fused layer-norm kernel on a [..., G, E/G] view, then a per-channel affine.
#include "framework/nn/group_norm.h"

#include "framework/autograd/ops/elementwise.h"
#include "framework/autograd/ops/norm.h"
#include "framework/autograd/ops/shape.h"

namespace rota::nn {

GroupNorm::GroupNorm(const GroupNormOptions& options) : options_(options) {
  ROTA_CHECK(options.dim > 0 && options.groups > 0 && options.dim % options.groups == 0,
             "GroupNorm: dim {} must be a positive multiple of groups {}", options.dim,
             options.groups);
  weight_ = register_parameter("weight", ones({options.dim}, options.dtype));
  if (options.bias) bias_ = register_parameter("bias", zeros({options.dim}, options.dtype));
}

Variable GroupNorm::forward(const Variable& x) const {
  ROTA_CHECK(x.dim() >= 1 && x.size(-1) == options_.dim, "GroupNorm: input {} does not end in {}",
             shape_str(x.shape()), options_.dim);
  Shape grouped = x.shape();
  grouped.back() = options_.groups;
  grouped.push_back(options_.dim / options_.groups);
  const Variable normalised = layer_norm(reshape(x, grouped), Variable(), Variable(), options_.eps);
  const Variable scaled = reshape(normalised, x.shape()) * weight_;
  return bias_.defined() ? scaled + bias_ : scaled;
}

}  // namespace rota::nn
