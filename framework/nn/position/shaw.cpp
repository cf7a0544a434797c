// Shaw relative tables: bucketed skew into the fused kernel; composed path for value tables.
#include "framework/nn/position/shaw.h"

#include <algorithm>
#include <limits>

#include "framework/autograd/ops/dropout.h"
#include "framework/autograd/ops/elementwise.h"
#include "framework/autograd/ops/indexing.h"
#include "framework/autograd/ops/matmul.h"
#include "framework/autograd/ops/reduce.h"
#include "framework/autograd/ops/relative_shift.h"
#include "framework/autograd/ops/shape.h"
#include "framework/backend/primitives/relative_shift.h"
#include "framework/nn/attention/softmax_attention.h"
#include "framework/nn/init.h"
#include "framework/nn/position/skew.h"

namespace rota::nn {

namespace {

// Which keys each query may not see, as [B, 1, Nq, Nk] (1 = hidden), and the rows where every
// key is hidden, as [B, 1, Nq, 1]. Host loops: this serves the composed (reference) path only.
struct HiddenMasks {
  Tensor hidden_in_live_rows;  // hidden entries of rows that keep at least one key
  Tensor dead_rows;
};

HiddenMasks hidden_masks(const AttentionCall& call, int64_t batch, int64_t n_q, int64_t n_k) {
  const Tensor vis =
      call.visibility_mask.defined() ? call.visibility_mask.contiguous().to(DType::kF64) : Tensor();
  const Tensor pad = call.key_padding_mask.defined()
                         ? call.key_padding_mask.contiguous().to(DType::kF64)
                         : Tensor();
  if (vis.defined()) {
    ROTA_CHECK(vis.dim() == 2 && vis.size(0) == n_q && vis.size(1) == n_k,
               "ShawRelativeEncoding: visibility_mask {} must be [Nq, Nk] = [{}, {}]",
               shape_str(vis.shape()), n_q, n_k);
  }
  if (pad.defined()) {
    ROTA_CHECK(pad.dim() == 2 && pad.size(0) == batch && pad.size(1) == n_k,
               "ShawRelativeEncoding: key_padding_mask {} must be [B, Nk] = [{}, {}]",
               shape_str(pad.shape()), batch, n_k);
  }
  const Tensor docs =
      call.segment_ids.defined() ? call.segment_ids.contiguous().to(DType::kI64) : Tensor();
  if (docs.defined()) {
    ROTA_CHECK(docs.dim() == 2 && docs.size(0) == batch && docs.size(1) == n_k &&
                   call.query_offset + n_q <= n_k,
               "ShawRelativeEncoding: segment_ids {} must be [B, Nk] = [{}, {}]",
               shape_str(docs.shape()), batch, n_k);
  }
  const double* vp = vis.defined() ? vis.data<double>() : nullptr;
  const double* pp = pad.defined() ? pad.data<double>() : nullptr;
  const int64_t* dp = docs.defined() ? docs.data<int64_t>() : nullptr;
  std::vector<double> hidden(batch * n_q * n_k, 0.0);
  std::vector<double> dead(batch * n_q, 0.0);
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t i = 0; i < n_q; ++i) {
      double* row = hidden.data() + (b * n_q + i) * n_k;
      bool any_visible = false;
      for (int64_t j = 0; j < n_k; ++j) {
        const bool h = (call.causal && j > call.query_offset + i) ||
                       (call.window > 0 && call.query_offset + i - j >= call.window) ||
                       (vp != nullptr && vp[i * n_k + j] == 0.0) ||
                       (pp != nullptr && pp[b * n_k + j] == 0.0) ||
                       (dp != nullptr && dp[b * n_k + j] != dp[b * n_k + call.query_offset + i]);
        row[j] = h ? 1.0 : 0.0;
        any_visible = any_visible || !h;
      }
      if (!any_visible) {
        std::fill(row, row + n_k, 0.0);  // keep the softmax finite; the row is zeroed after it
        dead[b * n_q + i] = 1.0;
      }
    }
  }
  return {tensor_from(hidden, {batch, 1, n_q, n_k}), tensor_from(dead, {batch, 1, n_q, 1})};
}

}  // namespace

ShawRelativeEncoding::ShawRelativeEncoding(const ShawOptions& options, Generator& gen)
    : options_(options),
      clip_left_(options.clip_left >= 0 ? options.clip_left : options.clip),
      clip_right_(options.clip_right >= 0 ? options.clip_right : options.clip) {
  ROTA_CHECK(options.head_dim > 0 && clip_left_ >= 0 && clip_right_ >= 0,
             "ShawRelativeEncoding: head_dim {} must be positive and the clip distances "
             "(left {}, right {}) non-negative",
             options.head_dim, clip_left_, clip_right_);
  const Shape shape = {clip_left_ + clip_right_ + 1, options.head_dim};
  // xavier_uniform_ on [rows, D]: bound √(6 / (rows + D)), the spec's glorot-uniform.
  key_table_ = register_parameter("key_table",
                                  init::xavier_uniform_(Tensor::empty(shape, options.dtype), gen));
  if (options.values) {
    value_table_ = register_parameter(
        "value_table", init::xavier_uniform_(Tensor::empty(shape, options.dtype), gen));
  }
}

int64_t ShawRelativeEncoding::bucket(int64_t t) const {
  return std::clamp(t, -clip_left_, clip_right_) + clip_left_;
}

ShawRelativeEncoding::Buckets ShawRelativeEncoding::buckets(int64_t n_q, int64_t n_k,
                                                            int64_t query_offset) const {
  const auto d = backend::relative_distances(n_q, n_k, query_offset);
  Buckets b;
  b.first = bucket(d.t_min);
  b.count = bucket(d.t_max) - b.first + 1;
  // κ is non-decreasing, so count == n_rel exactly when no distance of the block is clipped:
  // then the map is the identity and the plain skew applies.
  if (b.count != d.count) {
    b.column_map.resize(d.count);
    for (int64_t r = 0; r < d.count; ++r) b.column_map[r] = bucket(d.t_min + r) - b.first;
  }
  return b;
}

Variable ShawRelativeEncoding::key_bias(const Variable& q, int64_t n_k, const AttentionCall& call,
                                        const Buckets& b) const {
  // X = q·(s·E^K_needed)ᵀ: [B, H, Nq, count], then S[i, j] = X[i, κ(t_ij) − first].
  const Variable rows = narrow(key_table_, 0, b.first, b.count) * call.scale;
  return relative_logits(q, rows, n_k, b.column_map);
}

Variable ShawRelativeEncoding::attend(const Variable& q, const Variable& k, const Variable& v,
                                      const AttentionCall& call) const {
  if (options_.values) return attend_composed(q, k, v, call);
  relative::check_qkv("ShawRelativeEncoding", q, k, v, options_.head_dim);
  const Buckets b = buckets(q.size(2), k.size(2), call.query_offset);
  return attend_softmax(q, k, v, key_bias(q, k.size(2), call, b), call);
}

Variable ShawRelativeEncoding::attend_composed(const Variable& q, const Variable& k,
                                               const Variable& v, const AttentionCall& call) const {
  relative::check_qkv("ShawRelativeEncoding", q, k, v, options_.head_dim);
  ROTA_CHECK(!options_.values || v.size(3) == options_.head_dim,
             "ShawRelativeEncoding: the value table has width {} but v {} has {}",
             options_.head_dim, shape_str(v.shape()), v.size(3));
  const int64_t batch = q.size(0);
  const int64_t n_q = q.size(2);
  const int64_t n_k = k.size(2);
  const Buckets b = buckets(n_q, n_k, call.query_offset);
  // ℓ = s·q·kᵀ + s·q·E^K[κ]: [B, H, Nq, Nk].
  const Variable logits = matmul(q, k, false, true) * call.scale + key_bias(q, n_k, call, b);
  const HiddenMasks masks = hidden_masks(call, batch, n_q, n_k);
  Variable p = softmax(
      masked_fill(logits, masks.hidden_in_live_rows, -std::numeric_limits<double>::infinity()), -1);
  p = masked_fill(p, masks.dead_rows, 0.0);
  if (call.training && call.dropout > 0.0) {
    ROTA_CHECK(call.generator != nullptr,
               "ShawRelativeEncoding: dropout {} in training needs a generator", call.dropout);
    p = dropout(p, call.dropout, *call.generator, true);
  }
  Variable out = matmul(p, v);
  if (options_.values) {
    // W[i, r] = Σ_{j: κ(t_ij) = first + r} p_ij (unskew with the bucket map): [B, H, Nq, count];
    // o += W·E^V_needed.
    const Variable weights = relative_unshift(p, b.count, b.column_map);
    out = out + matmul(weights, narrow(value_table_, 0, b.first, b.count));
  }
  return out;
}

}  // namespace rota::nn
