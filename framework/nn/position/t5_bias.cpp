// T5 bucketed relative bias: bucket function, learned table, Toeplitz bias for the kernel.
#include "framework/nn/position/t5_bias.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "framework/autograd/ops/indexing.h"
#include "framework/autograd/ops/shape.h"
#include "framework/autograd/ops/softmax_attention.h"
#include "framework/nn/attention/softmax_attention.h"
#include "framework/nn/init.h"

namespace rota::nn {

namespace {
void check_bucket_options(bool bidirectional, int64_t num_buckets, int64_t max_distance) {
  const int64_t per_direction = bidirectional ? num_buckets / 2 : num_buckets;
  ROTA_CHECK(per_direction >= 2 && (!bidirectional || num_buckets % 2 == 0),
             "t5_relative_bucket: num_buckets = {} is too small{}", num_buckets,
             bidirectional ? " or odd for the bidirectional split" : "");
  ROTA_CHECK(max_distance > per_direction / 2,
             "t5_relative_bucket: max_distance = {} must exceed the exact range {}", max_distance,
             per_direction / 2);
}
}  // namespace

int64_t t5_relative_bucket(int64_t t, bool bidirectional, int64_t num_buckets,
                           int64_t max_distance) {
  check_bucket_options(bidirectional, num_buckets, max_distance);
  int64_t n_prime = num_buckets, base = 0, n = 0;
  if (bidirectional) {
    n_prime = num_buckets / 2;
    base = t > 0 ? n_prime : 0;
    n = std::llabs(t);
  } else {
    n = std::max<int64_t>(-t, 0);
  }
  const int64_t exact = n_prime / 2;
  if (n < exact) return base + n;
  // Same operations, order and precision as the references: float32 log of n/E, divided by
  // ln(L/E) and scaled by (n' − E) in float32, truncated toward zero.
  const float ratio = static_cast<float>(n) / static_cast<float>(exact);
  const float log_span = static_cast<float>(std::log(static_cast<double>(max_distance) / exact));
  const float scaled = std::log(ratio) / log_span * static_cast<float>(n_prime - exact);
  const int64_t large = exact + static_cast<int64_t>(scaled);
  return base + std::min(n_prime - 1, large);
}

T5RelativeBias::T5RelativeBias(const T5BiasOptions& options, Generator& gen) : options_(options) {
  ROTA_CHECK(options.heads >= 1, "T5RelativeBias: heads must be >= 1, got {}", options.heads);
  check_bucket_options(options.bidirectional, options.num_buckets, options.max_distance);
  weight_ = register_parameter(
      "weight", init::normal_(Tensor::empty({options.num_buckets, options.heads}, options.dtype),
                              gen, 0.0, options.init_std));
}

Tensor T5RelativeBias::buckets(int64_t nq, int64_t nk, int64_t query_offset) const {
  ROTA_CHECK(nq >= 1 && nk >= 1, "T5RelativeBias: needs Nq, Nk >= 1, got {}, {}", nq, nk);
  const int64_t n_rel = nq + nk - 1, t_min = -(nq - 1) - query_offset;
  Tensor out = Tensor::empty({n_rel}, DType::kI64);
  int64_t* p = out.data<int64_t>();
  for (int64_t r = 0; r < n_rel; ++r) {
    p[r] = t5_relative_bucket(t_min + r, options_.bidirectional, options_.num_buckets,
                              options_.max_distance);
  }
  return out;
}

Variable T5RelativeBias::table(int64_t nq, int64_t nk, int64_t query_offset) const {
  // weight [N_b, H] → rows per distance [n_rel, H] → [H, n_rel] (a transposed view).
  return transpose(index_select(weight_, 0, buckets(nq, nk, query_offset)), 0, 1);
}

Variable T5RelativeBias::bias(int64_t nq, int64_t nk, int64_t query_offset) const {
  return relative_position_bias(table(nq, nk, query_offset), nq, nk);
}

Variable T5RelativeBias::attend(const Variable& q, const Variable& k, const Variable& v,
                                const AttentionCall& call) const {
  ROTA_CHECK(q.dim() == 4 && q.size(1) == options_.heads,
             "T5RelativeBias: q {} must be [B, H = {}, Nq, D]", shape_str(q.shape()),
             options_.heads);
  ROTA_CHECK(k.dim() == 4, "T5RelativeBias: k {} must be [B, H, Nk, D]", shape_str(k.shape()));
  ROTA_CHECK(q.dtype() == weight_.dtype(), "T5RelativeBias: q dtype {} differs from the table's {}",
             dtype_name(q.dtype()), dtype_name(weight_.dtype()));
  return attend_softmax_relative(q, k, v, table(q.size(2), k.size(2), call.query_offset), call);
}

}  // namespace rota::nn
