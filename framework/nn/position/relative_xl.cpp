// Transformer-XL / ESPnet relative attention through the general skew and the fused kernel.
#include "framework/nn/position/relative_xl.h"

#include <cmath>
#include <vector>

#include "framework/autograd/ops/elementwise.h"
#include "framework/autograd/ops/relative_shift.h"
#include "framework/autograd/ops/shape.h"
#include "framework/backend/primitives/relative_shift.h"
#include "framework/nn/attention/softmax_attention.h"
#include "framework/nn/init.h"
#include "framework/nn/position/skew.h"

namespace rota::nn {

Tensor relative_sinusoids(int64_t t_min, int64_t count, int64_t pe_dim, double base,
                          SinusoidLayout layout, DType dtype) {
  ROTA_CHECK(pe_dim > 0 && pe_dim % 2 == 0 && count >= 0,
             "relative_sinusoids: pe_dim {} must be positive and even, count {} non-negative",
             pe_dim, count);
  const int64_t half = pe_dim / 2;
  std::vector<double> omega(half);
  for (int64_t c = 0; c < half; ++c) {
    omega[c] = std::pow(base, -2.0 * static_cast<double>(c) / static_cast<double>(pe_dim));
  }
  std::vector<double> table(count * pe_dim);
  for (int64_t r = 0; r < count; ++r) {
    // ρ = −t: sin is odd in ρ, so the past (ρ > 0) and the future (ρ < 0) stay distinct.
    const double rho = -static_cast<double>(t_min + r);
    double* row = table.data() + r * pe_dim;
    for (int64_t c = 0; c < half; ++c) {
      const double s = std::sin(rho * omega[c]);
      const double co = std::cos(rho * omega[c]);
      if (layout == SinusoidLayout::kInterleaved) {
        row[2 * c] = s;
        row[2 * c + 1] = co;
      } else {
        row[c] = s;
        row[half + c] = co;
      }
    }
  }
  return tensor_from(table, {count, pe_dim}, dtype);
}

RelativeXlEncoding::RelativeXlEncoding(const RelativeXlOptions& options, Generator& gen)
    : options_(options),
      pe_dim_(options.pe_dim > 0 ? options.pe_dim : options.heads * options.head_dim) {
  ROTA_CHECK(options.heads > 0 && options.head_dim > 0 && pe_dim_ % 2 == 0,
             "RelativeXlEncoding: heads {} and head_dim {} must be positive and pe_dim {} even",
             options.heads, options.head_dim, pe_dim_);
  LinearOptions lo;
  lo.in_features = pe_dim_;
  lo.out_features = options.heads * options.head_dim;
  lo.bias = false;
  lo.dtype = options.dtype;
  linear_pos_ = register_module("linear_pos", std::make_shared<Linear>(lo, gen));
  // xavier_uniform_ on [H, D]: bound √(6 / (H + D)), as ESPnet.
  const Shape shape = {options.heads, options.head_dim};
  pos_bias_u_ = register_parameter("pos_bias_u",
                                   init::xavier_uniform_(Tensor::empty(shape, options.dtype), gen));
  pos_bias_v_ = register_parameter("pos_bias_v",
                                   init::xavier_uniform_(Tensor::empty(shape, options.dtype), gen));
}

Variable RelativeXlEncoding::projected_positions(int64_t t_min, int64_t count) const {
  const Variable pe(
      relative_sinusoids(t_min, count, pe_dim_, options_.base, options_.layout, options_.dtype));
  // [n_rel, H·D] → [n_rel, H, D] → [H, n_rel, D] (a view; matmul reads it through strides).
  const Variable p = linear_pos_->forward(pe);
  return permute(reshape(p, {count, options_.heads, options_.head_dim}), {1, 0, 2});
}

Variable RelativeXlEncoding::position_bias(const Variable& q, int64_t n_k,
                                           const AttentionCall& call) const {
  const auto d = backend::relative_distances(q.size(2), n_k, call.query_offset);
  // s·P (n_rel × H·D values) instead of scaling the [B, H, Nq, Nk] result.
  const Variable p = projected_positions(d.t_min, d.count) * call.scale;
  const Variable q_v = q + reshape(pos_bias_v_, {1, options_.heads, 1, options_.head_dim});
  return relative_logits(q_v, p, n_k);
}

Variable RelativeXlEncoding::attend(const Variable& q, const Variable& k, const Variable& v,
                                    const AttentionCall& call) const {
  relative::check_qkv("RelativeXlEncoding", q, k, v, options_.head_dim, options_.heads);
  const Variable q_u = q + reshape(pos_bias_u_, {1, options_.heads, 1, options_.head_dim});
  return attend_softmax(q_u, k, v, position_bias(q, k.size(2), call), call);
}

}  // namespace rota::nn
