// The generalised skew encoding and the shared q/k/v shape check.
#include "framework/nn/position/skew.h"

#include <cmath>

#include "framework/autograd/ops/elementwise.h"
#include "framework/autograd/ops/relative_shift.h"
#include "framework/autograd/ops/shape.h"
#include "framework/backend/primitives/relative_shift.h"
#include "framework/nn/attention/softmax_attention.h"
#include "framework/nn/init.h"

namespace rota::nn {

namespace relative {

void check_qkv(const char* op, const Variable& q, const Variable& k, const Variable& v,
               int64_t head_dim, int64_t heads) {
  ROTA_CHECK(q.dim() == 4 && k.dim() == 4 && v.dim() == 4 && q.size(0) == k.size(0) &&
                 q.size(0) == v.size(0) && q.size(1) == k.size(1) && q.size(1) == v.size(1) &&
                 q.size(3) == k.size(3) && k.size(2) == v.size(2),
             "{}: q {}, k {}, v {} must be [B, H, Nq, D], [B, H, Nk, D], [B, H, Nk, Dv]", op,
             shape_str(q.shape()), shape_str(k.shape()), shape_str(v.shape()));
  ROTA_CHECK(q.size(2) > 0 && k.size(2) > 0, "{}: q {} and k {} need at least one query and key",
             op, shape_str(q.shape()), shape_str(k.shape()));
  ROTA_CHECK(q.size(3) == head_dim, "{}: q {} has head dim {}, the encoding was built for {}", op,
             shape_str(q.shape()), q.size(3), head_dim);
  ROTA_CHECK(heads <= 0 || q.size(1) == heads,
             "{}: q {} has {} heads, the encoding was built for {}", op, shape_str(q.shape()),
             q.size(1), heads);
}

}  // namespace relative

SkewRelativeEncoding::SkewRelativeEncoding(const SkewOptions& options, Generator& gen)
    : options_(options) {
  ROTA_CHECK(options.head_dim > 0 && options.max_len > 0 && options.heads > 0,
             "SkewRelativeEncoding: head_dim {}, max_len {} and heads {} must be positive",
             options.head_dim, options.max_len, options.heads);
  const int64_t rows = 2 * options.max_len - 1;
  Shape shape = {rows, options.head_dim};
  if (options.per_head) shape.insert(shape.begin(), options.heads);
  Tensor table = Tensor::empty(shape, options.dtype);
  // Glorot-uniform over one [2L − 1, D] table: bound √(6 / (2L − 1 + D)) (per head as well).
  const double bound = std::sqrt(6.0 / static_cast<double>(rows + options.head_dim));
  init::uniform_(table, gen, -bound, bound);
  table_ = register_parameter("table", table);
}

Variable SkewRelativeEncoding::relative_bias(const Variable& q, int64_t n_k,
                                             const AttentionCall& call) const {
  const int64_t n_q = q.size(2);
  const int64_t reach = options_.max_len - 1;
  const auto d = backend::relative_distances(n_q, n_k, call.query_offset);
  ROTA_CHECK(d.t_min >= -reach && d.t_max <= reach,
             "SkewRelativeEncoding: n_q = {}, n_k = {} at query_offset {} need relative "
             "distances {} … {}, but the table was built for max_len = {} (|t| <= {})",
             n_q, n_k, call.query_offset, d.t_min, d.t_max, options_.max_len, reach);
  // Only the n_q + n_k − 1 rows the block reaches: t_min … t_max ↔ rows t + L − 1. The scale
  // is applied to these few rows instead of the [B, H, Nq, Nk] result.
  const Variable rows = narrow(table_, -2, d.t_min + reach, d.count) * call.scale;
  return relative_logits(q, rows, n_k);
}

Variable SkewRelativeEncoding::attend(const Variable& q, const Variable& k, const Variable& v,
                                      const AttentionCall& call) const {
  relative::check_qkv("SkewRelativeEncoding", q, k, v, options_.head_dim,
                      options_.per_head ? options_.heads : 0);
  return attend_softmax(q, k, v, relative_bias(q, k.size(2), call), call);
}

}  // namespace rota::nn
