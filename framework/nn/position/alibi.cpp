// ALiBi slopes and the Toeplitz bias handed to the fused softmax attention kernel.
#include "framework/nn/position/alibi.h"

#include <cmath>
#include <cstdlib>

#include "framework/autograd/ops/softmax_attention.h"
#include "framework/nn/attention/softmax_attention.h"

namespace rota::nn {

std::vector<double> alibi_slopes(int64_t heads) {
  ROTA_CHECK(heads >= 1, "alibi_slopes: heads must be >= 1, got {}", heads);
  int64_t c = 1;  // largest power of two <= heads
  while (c * 2 <= heads) c *= 2;
  std::vector<double> slopes;
  slopes.reserve(heads);
  for (int64_t h = 0; h < c; ++h) slopes.push_back(std::exp2(-8.0 * (h + 1) / c));
  // Not a power of two: the even positions of the 2c-head model's list, 2^(−8(2h+1)/(2c)).
  for (int64_t h = 0; static_cast<int64_t>(slopes.size()) < heads; ++h) {
    slopes.push_back(std::exp2(-4.0 * (2 * h + 1) / c));
  }
  return slopes;
}

Alibi::Alibi(int64_t heads) : slopes_(alibi_slopes(heads)) {}

Tensor Alibi::table(int64_t nq, int64_t nk, int64_t query_offset, DType dtype) const {
  ROTA_CHECK(nq >= 1 && nk >= 1, "Alibi: needs Nq, Nk >= 1, got {}, {}", nq, nk);
  const int64_t h_count = heads(), n_rel = nq + nk - 1;
  const int64_t t_min = -(nq - 1) - query_offset;
  std::vector<double> values(h_count * n_rel);
  for (int64_t h = 0; h < h_count; ++h) {
    for (int64_t r = 0; r < n_rel; ++r) {
      values[h * n_rel + r] = -slopes_[h] * static_cast<double>(std::llabs(t_min + r));
    }
  }
  return tensor_from(values, {h_count, n_rel}, dtype);
}

Tensor Alibi::bias(int64_t nq, int64_t nk, int64_t query_offset, DType dtype) const {
  return backend::relative_bias_view(table(nq, nk, query_offset, dtype), nq, nk);
}

Variable Alibi::attend(const Variable& q, const Variable& k, const Variable& v,
                       const AttentionCall& call) const {
  ROTA_CHECK(q.dim() == 4 && q.size(1) == heads(), "Alibi: q {} must be [B, H = {}, Nq, D]",
             shape_str(q.shape()), heads());
  ROTA_CHECK(k.dim() == 4, "Alibi: k {} must be [B, H, Nk, D]", shape_str(k.shape()));
  const Variable t(table(q.size(2), k.size(2), call.query_offset, q.dtype()));
  return attend_softmax_relative(q, k, v, t, call);
}

}  // namespace rota::nn
