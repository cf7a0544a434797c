// PermuteFormer baseline.
#include "framework/nn/position/permute_former.h"

#include <cmath>

#include "framework/autograd/ops/lrpe.h"

namespace rota::nn {

PermuteFormer::PermuteFormer(int64_t heads, int64_t head_dim, Generator& gen)
    : heads_(heads), head_dim_(head_dim) {
  ROTA_CHECK(heads > 0 && head_dim > 0, "PermuteFormer: bad sizes heads={} head_dim={}", heads,
             head_dim);
  permutation_ = register_buffer("permutation", randperm(head_dim, gen));
}

Variable PermuteFormer::permute(const Variable& x, int64_t offset) const {
  ROTA_CHECK(x.dim() >= 2 && x.size(-1) == head_dim_,
             "PermuteFormer: input {} does not end in head_dim = {}", shape_str(x.shape()),
             head_dim_);
  // π^s permutation powers are exactly LRPE Type 3 with identity P.
  backend::LrpeKernelConfig config;
  config.core = backend::LrpeCore::kPermutation;
  config.p = backend::LrpeP::kIdentity;
  config.offset = offset;
  return lrpe(config, x, Variable(), Variable(), permutation_);
}

Tensor PermuteFormer::decay(DType dtype) const {
  std::vector<double> gamma(heads_);
  for (int64_t h = 0; h < heads_; ++h) {
    gamma[h] = 1.0 / (1.0 + std::exp(-(3.0 * h / heads_ + 2.0)));
  }
  return tensor_from(gamma, {heads_}, dtype);
}

}  // namespace rota::nn
