// Shaw / Transformer-XL / generalised skew encodings against per-(i, j) loops of their defining
// formulas (causal and not, self and cross, offsets, clipping, masks), the alternative
// realisations (composed path, ESPnet pad-reshape, the blog's diagonal stacking) and
// streaming chunk attention = masked full attention.
#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "framework/autograd/ops/elementwise.h"
#include "framework/autograd/ops/matmul.h"
#include "framework/autograd/ops/shape.h"
#include "framework/backend/primitives/relative_shift.h"
#include "framework/nn/attention/streaming_chunk_attention.h"
#include "framework/nn/position/relative_xl.h"
#include "framework/nn/position/shaw.h"
#include "framework/nn/position/skew.h"
#include "framework/tensor/random.h"
#include "tests/support/allclose.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

using testing::allclose;

// ---------------------------------------------------------------------------------------------
// The reference: ℓ_ij = s·score(b, h, i, j) with score = q_i·k_j + a_ij, hidden keys excluded,
// p = softmax, o_i = Σ_j p_ij (v_j + c_ij); rows without a visible key give 0. All in double.

struct Geometry {
  std::string name;
  int64_t batch, heads, n_q, n_k, head_dim, offset;
  bool causal = false;
  bool visibility = false;  // a fixed pattern of hidden entries
  bool padding = false;     // the last two keys of batch 1 are padding
  bool dead_row = false;    // query 0 sees no key at all
};

std::vector<Geometry> geometries() {
  return {
      {"self_full", 2, 2, 5, 5, 4, 0},
      {"self_causal_odd", 2, 2, 7, 7, 4, 0, true},
      {"cross_start", 2, 2, 3, 6, 4, 0},
      {"cross_end_causal", 1, 2, 3, 9, 4, 6, true},
      {"more_queries_offset", 2, 1, 6, 4, 4, 2},
      {"masked_offset", 2, 2, 5, 7, 4, 2, false, true, true, true},
      {"causal_offset_padding", 2, 2, 4, 6, 4, 2, true, false, true},
      {"long_beyond_clip", 1, 1, 21, 21, 4, 0},
  };
}

using nn::AttentionCall;

AttentionCall make_call(const Geometry& g) {
  AttentionCall call;
  call.scale = 1.0 / std::sqrt(static_cast<double>(g.head_dim));
  call.causal = g.causal;
  call.query_offset = g.offset;
  if (g.visibility || g.dead_row) {
    Tensor vis = ones({g.n_q, g.n_k});
    if (g.visibility) {
      for (int64_t i = 0; i < g.n_q; ++i)
        for (int64_t j = 0; j < g.n_k; ++j)
          if ((3 * i + 5 * j) % 4 == 0 && j != i % g.n_k) vis.set({i, j}, 0.0);
    }
    if (g.dead_row) {
      for (int64_t j = 0; j < g.n_k; ++j) vis.set({0, j}, 0.0);
    }
    call.visibility_mask = vis;
  }
  if (g.padding) {
    Tensor pad = ones({g.batch, g.n_k});
    pad.set({1, g.n_k - 1}, 0.0);
    pad.set({1, g.n_k - 2}, 0.0);
    call.key_padding_mask = pad;
  }
  return call;
}

bool visible(const AttentionCall& call, int64_t b, int64_t i, int64_t j) {
  if (call.causal && j > call.query_offset + i) return false;
  if (call.visibility_mask.defined() && call.visibility_mask.at({i, j}) == 0.0) return false;
  if (call.key_padding_mask.defined() && call.key_padding_mask.at({b, j}) == 0.0) return false;
  return true;
}

using ScoreFn = std::function<double(int64_t b, int64_t h, int64_t i, int64_t j)>;
using ValueOffsetFn = std::function<double(int64_t i, int64_t j, int64_t c)>;

Tensor reference(const AttentionCall& call, int64_t n_q, const Tensor& v, const ScoreFn& score,
                 const ValueOffsetFn& value_offset = nullptr) {
  const int64_t batch = v.size(0), heads = v.size(1), n_k = v.size(2), dv = v.size(3);
  Tensor out = zeros({batch, heads, n_q, dv}, DType::kF64);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < n_q; ++i) {
        std::vector<double> logit(n_k, 0.0);
        double mx = -INFINITY;
        for (int64_t j = 0; j < n_k; ++j) {
          if (!visible(call, b, i, j)) continue;
          logit[j] = call.scale * score(b, h, i, j);
          mx = std::max(mx, logit[j]);
        }
        if (mx == -INFINITY) continue;  // no visible key: output 0
        double z = 0.0;
        std::vector<double> p(n_k, 0.0);
        for (int64_t j = 0; j < n_k; ++j) {
          if (!visible(call, b, i, j)) continue;
          p[j] = std::exp(logit[j] - mx);
          z += p[j];
        }
        for (int64_t c = 0; c < dv; ++c) {
          double o = 0.0;
          for (int64_t j = 0; j < n_k; ++j) {
            if (p[j] == 0.0) continue;
            const double val = v.at({b, h, j, c}) + (value_offset ? value_offset(i, j, c) : 0.0);
            o += p[j] / z * val;
          }
          out.set({b, h, i, c}, o);
        }
      }
  return out;
}

// ---------------------------------------------------------------------------------------------
// The encodings under test, each with its defining formula.

enum class Kind {
  kShaw,            // K = 2 (lengths beyond the clip)
  kShawValues,      // K = 2 with the value table
  kShawAsymmetric,  // K_left = 3, K_right = 1, values
  kShawDefault,     // K = 16
  kXlInterleaved,
  kXlConcatenated,  // d_pe ≠ H·D as well
  kSkewShared,
  kSkewPerHead,
};

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::kShaw:
      return "Shaw";
    case Kind::kShawValues:
      return "ShawValues";
    case Kind::kShawAsymmetric:
      return "ShawAsymmetric";
    case Kind::kShawDefault:
      return "ShawDefault";
    case Kind::kXlInterleaved:
      return "XlInterleaved";
    case Kind::kXlConcatenated:
      return "XlConcatenated";
    case Kind::kSkewShared:
      return "SkewShared";
    case Kind::kSkewPerHead:
      return "SkewPerHead";
  }
  return "";
}

constexpr int64_t kSkewMaxLen = 24;

std::shared_ptr<nn::RelativeAttentionEncoding> make_encoding(Kind kind, const Geometry& g,
                                                             DType dtype, uint64_t seed) {
  Generator gen(seed);
  switch (kind) {
    case Kind::kShaw:
    case Kind::kShawValues:
    case Kind::kShawAsymmetric:
    case Kind::kShawDefault: {
      nn::ShawOptions o;
      o.head_dim = g.head_dim;
      o.clip = kind == Kind::kShawDefault ? 16 : 2;
      if (kind == Kind::kShawAsymmetric) {
        o.clip_left = 3;
        o.clip_right = 1;
      }
      o.values = kind == Kind::kShawValues || kind == Kind::kShawAsymmetric;
      o.dtype = dtype;
      return std::make_shared<nn::ShawRelativeEncoding>(o, gen);
    }
    case Kind::kXlInterleaved:
    case Kind::kXlConcatenated: {
      nn::RelativeXlOptions o;
      o.heads = g.heads;
      o.head_dim = g.head_dim;
      if (kind == Kind::kXlConcatenated) {
        o.layout = nn::SinusoidLayout::kConcatenated;
        o.pe_dim = 6;
      }
      o.dtype = dtype;
      auto enc = std::make_shared<nn::RelativeXlEncoding>(o, gen);
      // Non-zero, distinct u and v so that a swapped bias would show.
      Generator pg(seed + 1);
      Tensor(enc->pos_bias_u().data()).copy_from(randn({g.heads, g.head_dim}, pg, 0.0, 0.5, dtype));
      Tensor(enc->pos_bias_v().data()).copy_from(randn({g.heads, g.head_dim}, pg, 0.0, 0.5, dtype));
      return enc;
    }
    case Kind::kSkewShared:
    case Kind::kSkewPerHead: {
      nn::SkewOptions o;
      o.head_dim = g.head_dim;
      o.max_len = kSkewMaxLen;
      o.heads = g.heads;
      o.per_head = kind == Kind::kSkewPerHead;
      o.dtype = dtype;
      return std::make_shared<nn::SkewRelativeEncoding>(o, gen);
    }
  }
  return nullptr;
}

// pe(ρ)[c] of encodings.md section 5, written out independently of relative_sinusoids.
double sinusoid(double rho, int64_t c, int64_t pe_dim, nn::SinusoidLayout layout) {
  const int64_t half = pe_dim / 2;
  const int64_t freq = layout == nn::SinusoidLayout::kInterleaved ? c / 2 : c % half;
  const bool is_sin = layout == nn::SinusoidLayout::kInterleaved ? c % 2 == 0 : c < half;
  const double angle = rho * std::exp(-std::log(10000.0) * 2.0 * freq / pe_dim);
  return is_sin ? std::sin(angle) : std::cos(angle);
}

// The defining formula of each encoding: score(b, h, i, j) = q_i·k_j + a_ij and c_ij.
struct Formula {
  ScoreFn score;
  ValueOffsetFn value_offset;
};

Formula formula(Kind kind, const nn::RelativeAttentionEncoding& enc, const Tensor& q,
                const Tensor& k, int64_t offset) {
  const int64_t d = q.size(3);
  Formula f;
  auto t_of = [offset](int64_t i, int64_t j) { return j - i - offset; };
  switch (kind) {
    case Kind::kShaw:
    case Kind::kShawValues:
    case Kind::kShawAsymmetric:
    case Kind::kShawDefault: {
      const auto& shaw = dynamic_cast<const nn::ShawRelativeEncoding&>(enc);
      const Tensor ek = shaw.key_table().data().to(DType::kF64);
      const int64_t left = shaw.clip_left(), right = shaw.clip_right();
      auto kappa = [=](int64_t t) { return std::min(std::max(t, -left), right) + left; };
      f.score = [=](int64_t b, int64_t h, int64_t i, int64_t j) {
        double s = 0.0;
        for (int64_t c = 0; c < d; ++c)
          s += q.at({b, h, i, c}) * (k.at({b, h, j, c}) + ek.at({kappa(t_of(i, j)), c}));
        return s;
      };
      if (shaw.options().values) {
        const Tensor ev = shaw.value_table().data().to(DType::kF64);
        f.value_offset = [=](int64_t i, int64_t j, int64_t c) {
          return ev.at({kappa(t_of(i, j)), c});
        };
      }
      return f;
    }
    case Kind::kXlInterleaved:
    case Kind::kXlConcatenated: {
      const auto& xl = dynamic_cast<const nn::RelativeXlEncoding&>(enc);
      const Tensor w = xl.linear_pos().weight().data().to(DType::kF64);  // [H·D, d_pe]
      const Tensor u = xl.pos_bias_u().data().to(DType::kF64);
      const Tensor v = xl.pos_bias_v().data().to(DType::kF64);
      const int64_t pe_dim = xl.pe_dim();
      const auto layout = xl.options().layout;
      f.score = [=](int64_t b, int64_t h, int64_t i, int64_t j) {
        const double rho = static_cast<double>(i + offset - j);  // ρ = P_q − P_k
        double s = 0.0;
        for (int64_t c = 0; c < d; ++c) {
          double p = 0.0;  // p_h(ρ)[c] = (W_pos·pe(ρ))[h·D + c]
          for (int64_t e = 0; e < pe_dim; ++e)
            p += w.at({h * d + c, e}) * sinusoid(rho, e, pe_dim, layout);
          s += (q.at({b, h, i, c}) + u.at({h, c})) * k.at({b, h, j, c}) +
               (q.at({b, h, i, c}) + v.at({h, c})) * p;
        }
        return s;
      };
      return f;
    }
    case Kind::kSkewShared:
    case Kind::kSkewPerHead: {
      const auto& skew = dynamic_cast<const nn::SkewRelativeEncoding&>(enc);
      const Tensor e = skew.table().data().to(DType::kF64);
      const bool per_head = skew.options().per_head;
      const int64_t reach = skew.options().max_len - 1;
      f.score = [=](int64_t b, int64_t h, int64_t i, int64_t j) {
        const int64_t row = t_of(i, j) + reach;
        double s = 0.0;
        for (int64_t c = 0; c < d; ++c)
          s += q.at({b, h, i, c}) *
               (k.at({b, h, j, c}) + (per_head ? e.at({h, row, c}) : e.at({row, c})));
        return s;
      };
      return f;
    }
  }
  return f;
}

struct EncodingCase {
  Kind kind;
  Geometry geometry;
};

std::vector<EncodingCase> encoding_cases() {
  std::vector<EncodingCase> out;
  for (Kind kind :
       {Kind::kShaw, Kind::kShawValues, Kind::kShawAsymmetric, Kind::kShawDefault,
        Kind::kXlInterleaved, Kind::kXlConcatenated, Kind::kSkewShared, Kind::kSkewPerHead}) {
    for (const Geometry& g : geometries()) out.push_back({kind, g});
  }
  return out;
}

class RelativeEncodingLoop : public ::testing::TestWithParam<EncodingCase> {};

void check_against_loop(const EncodingCase& c, DType dtype, double rtol, double atol) {
  const Geometry& g = c.geometry;
  const auto enc = make_encoding(c.kind, g, dtype, 11);
  Generator gen(5);
  const Tensor q = randn({g.batch, g.heads, g.n_q, g.head_dim}, gen, 0.0, 1.0, DType::kF64);
  const Tensor k = randn({g.batch, g.heads, g.n_k, g.head_dim}, gen, 0.0, 1.0, DType::kF64);
  const Tensor v = randn({g.batch, g.heads, g.n_k, g.head_dim}, gen, 0.0, 1.0, DType::kF64);
  const AttentionCall call = make_call(g);
  const Tensor out =
      enc->attend(Variable(q.to(dtype)), Variable(k.to(dtype)), Variable(v.to(dtype)), call).data();
  EXPECT_EQ(out.dtype(), dtype);
  // The loop sees exactly the values the module used (f32 inputs and parameters widened).
  const Tensor qd = q.to(dtype).to(DType::kF64);
  const Tensor kd = k.to(dtype).to(DType::kF64);
  const Tensor vd = v.to(dtype).to(DType::kF64);
  const Formula f = formula(c.kind, *enc, qd, kd, g.offset);
  const Tensor expected = reference(call, g.n_q, vd, f.score, f.value_offset);
  EXPECT_TRUE(allclose(out.to(DType::kF64), expected, rtol, atol));
}

TEST_P(RelativeEncodingLoop, DoubleEqualsDefiningFormula) {
  check_against_loop(GetParam(), DType::kF64, 1e-11, 1e-12);
}

TEST_P(RelativeEncodingLoop, FloatEqualsDefiningFormula) {
  check_against_loop(GetParam(), DType::kF32, 1e-4, 2e-5);
}

INSTANTIATE_TEST_SUITE_P(Cases, RelativeEncodingLoop, ::testing::ValuesIn(encoding_cases()),
                         [](const ::testing::TestParamInfo<EncodingCase>& info) {
                           return std::string(kind_name(info.param.kind)) + "_" +
                                  info.param.geometry.name;
                         });

// ---------------------------------------------------------------------------------------------
// Alternative realisations.

TEST(ShawEncoding, FusedPathEqualsComposedPath) {
  for (const Geometry& g : geometries()) {
    const auto enc = make_encoding(Kind::kShaw, g, DType::kF64, 3);
    const auto& shaw = dynamic_cast<const nn::ShawRelativeEncoding&>(*enc);
    Generator gen(6);
    const Variable q(randn({g.batch, g.heads, g.n_q, g.head_dim}, gen, 0, 1, DType::kF64));
    const Variable k(randn({g.batch, g.heads, g.n_k, g.head_dim}, gen, 0, 1, DType::kF64));
    const Variable v(randn({g.batch, g.heads, g.n_k, 3}, gen, 0, 1, DType::kF64));  // Dv ≠ D
    const AttentionCall call = make_call(g);
    EXPECT_TRUE(allclose(shaw.attend(q, k, v, call).data(),
                         shaw.attend_composed(q, k, v, call).data(), 1e-12, 1e-13))
        << g.name;
  }
}

TEST(ShawEncoding, BucketsClipBothSides) {
  Generator gen(1);
  nn::ShawOptions o;
  o.head_dim = 4;
  o.clip = 3;
  const nn::ShawRelativeEncoding sym(o, gen);
  EXPECT_EQ(sym.key_table().shape(), (Shape{7, 4}));
  EXPECT_EQ(sym.bucket(-10), 0);
  EXPECT_EQ(sym.bucket(-3), 0);
  EXPECT_EQ(sym.bucket(0), 3);
  EXPECT_EQ(sym.bucket(2), 5);
  EXPECT_EQ(sym.bucket(40), 6);
  EXPECT_FALSE(sym.value_table().defined());
  o.clip_left = 64;
  o.clip_right = 8;
  o.values = true;
  const nn::ShawRelativeEncoding wenet(o, gen);
  EXPECT_EQ(wenet.key_table().shape(), (Shape{73, 4}));
  EXPECT_EQ(wenet.value_table().shape(), (Shape{73, 4}));
  EXPECT_EQ(wenet.bucket(-100), 0);
  EXPECT_EQ(wenet.bucket(0), 64);
  EXPECT_EQ(wenet.bucket(9), 72);
  // Glorot bound √(6 / (73 + 4)).
  const double bound = std::sqrt(6.0 / 77.0);
  for (double x : wenet.key_table().data().to_double_vector()) EXPECT_LE(std::abs(x), bound);
}

TEST(ShawEncoding, ValueTableNeedsMatchingValueWidth) {
  Generator gen(1);
  nn::ShawOptions o;
  o.head_dim = 4;
  o.values = true;
  const nn::ShawRelativeEncoding shaw(o, gen);
  const Variable q(zeros({1, 1, 3, 4}));
  const Variable v(zeros({1, 1, 3, 5}));
  EXPECT_THROW(shaw.attend(q, q, v, {}), Error);
}

// The blog post's construction, literally: E_blog [D, 2L − 1] with column m ↔ t = L − 1 − m,
// QE = Q·E_blog, stack the diagonals k = L−1 (top) … 0 of QE → [L, n_q], transpose, keep the
// first n_k columns. Start-aligned (query_offset = 0).
TEST(SkewEncoding, EqualsDiagonalStackingOfTheBlogPost) {
  for (const auto& [n_q, n_k, max_len] :
       std::vector<std::tuple<int64_t, int64_t, int64_t>>{{5, 5, 5}, {3, 7, 8}, {6, 2, 6}}) {
    Generator gen(2);
    nn::SkewOptions o;
    o.head_dim = 3;
    o.max_len = max_len;
    const nn::SkewRelativeEncoding skew(o, gen);
    const Tensor q = randn({1, 2, n_q, 3}, gen, 0, 1, DType::kF32).to(DType::kF64);
    const Tensor table = skew.table().data().to(DType::kF64);  // [2L − 1, D], row r ↔ r − (L−1)
    const int64_t cols = 2 * max_len - 1;
    AttentionCall call;
    call.scale = 1.0;
    const Tensor bias = skew.relative_bias(Variable(q.to(DType::kF32)), n_k, call).data();
    for (int64_t h = 0; h < 2; ++h) {
      // QE[i, m] = q_i · E_blog[:, m], E_blog[:, m] = table[2L − 2 − m].
      std::vector<double> qe(n_q * cols);
      for (int64_t i = 0; i < n_q; ++i)
        for (int64_t m = 0; m < cols; ++m) {
          double s = 0.0;
          for (int64_t c = 0; c < 3; ++c) s += q.at({0, h, i, c}) * table.at({cols - 1 - m, c});
          qe[i * cols + m] = s;
        }
      // stacked[row, i] = diagonal k = L − 1 − row of QE at i = QE[i, i + k].
      for (int64_t row = 0; row < max_len; ++row)
        for (int64_t i = 0; i < n_q; ++i) {
          const int64_t kdiag = max_len - 1 - row;
          const double s_ij = qe[i * cols + i + kdiag];  // S = stackedᵀ: S[i, j = row]
          if (row < n_k) {
            EXPECT_NEAR(bias.at({0, h, i, row}), s_ij, 1e-5) << i << "," << row;
          }
        }
    }
  }
}

TEST(SkewEncoding, DistancesBeyondMaxLenThrow) {
  Generator gen(1);
  nn::SkewOptions o;
  o.head_dim = 4;
  o.max_len = 6;
  const nn::SkewRelativeEncoding skew(o, gen);
  const Variable q6(zeros({1, 1, 6, 4})), q7(zeros({1, 1, 7, 4}));
  EXPECT_NO_THROW(skew.attend(q6, q6, q6, {}));
  try {
    skew.attend(q7, q7, q7, {});
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("max_len = 6"), std::string::npos) << e.what();
  }
  AttentionCall late;
  late.query_offset = 3;  // 3 queries at positions 3..5 of 4 keys: t ∈ [−5, 0] fits
  const Variable q3(zeros({1, 1, 3, 4})), k4(zeros({1, 1, 4, 4}));
  EXPECT_NO_THROW(skew.attend(q3, k4, k4, late));
  late.query_offset = 6;  // t_min = −8: beyond the table
  EXPECT_THROW(skew.attend(q3, k4, k4, late), Error);
}

TEST(XlEncoding, PositionTermEqualsEspnetPadReshape) {
  // ESPnet "latest" for self-attention: X = (q + v)·Pᵀ over the 2T − 1 rows, pad-reshape
  // rel_shift, keep T = x.size(-1)/2 + 1 columns.
  const int64_t t = 6;
  Geometry g{"self", 2, 2, t, t, 4, 0};
  const auto enc = make_encoding(Kind::kXlInterleaved, g, DType::kF64, 4);
  const auto& xl = dynamic_cast<const nn::RelativeXlEncoding&>(*enc);
  Generator gen(3);
  const Variable q(randn({2, 2, t, 4}, gen, 0, 1, DType::kF64));
  AttentionCall call;
  call.scale = 1.0;
  const Tensor bd = xl.position_bias(q, t, call).data();
  const Variable p = xl.projected_positions(-(t - 1), 2 * t - 1);  // [H, 2T − 1, D]
  const Variable q_v = q + reshape(xl.pos_bias_v(), {1, 2, 1, 4});
  const Tensor x = matmul(q_v, p, false, true).data();  // [B, H, T, 2T − 1]
  EXPECT_TRUE(
      allclose(bd, backend::relative_shift_pad_reshape(x, x.size(-1) / 2 + 1), 1e-14, 1e-14));
}

TEST(XlEncoding, SinusoidRowsAreInDescendingRho) {
  const Tensor pe = nn::relative_sinusoids(-3, 7, 8, 10000.0, nn::SinusoidLayout::kInterleaved,
                                           DType::kF64);  // t = −3 … 3 ↔ ρ = 3 … −3
  for (int64_t r = 0; r < 7; ++r) {
    const double rho = 3.0 - r;
    for (int64_t c = 0; c < 8; ++c) {
      EXPECT_NEAR(pe.at({r, c}), sinusoid(rho, c, 8, nn::SinusoidLayout::kInterleaved), 1e-15);
    }
    // sin is odd in ρ (speechbrain#3070): the past and the future differ.
    EXPECT_NEAR(pe.at({r, 0}), -pe.at({6 - r, 0}), 1e-15);
    EXPECT_NEAR(pe.at({r, 1}), pe.at({6 - r, 1}), 1e-15);
  }
  EXPECT_DOUBLE_EQ(pe.at({2, 2}), std::sin(1.0 * std::pow(10000.0, -2.0 / 8)));
  const Tensor cat =
      nn::relative_sinusoids(-3, 7, 8, 10000.0, nn::SinusoidLayout::kConcatenated, DType::kF64);
  for (int64_t r = 0; r < 7; ++r)
    for (int64_t c = 0; c < 4; ++c) {
      EXPECT_EQ(cat.at({r, c}), pe.at({r, 2 * c}));
      EXPECT_EQ(cat.at({r, 4 + c}), pe.at({r, 2 * c + 1}));
    }
  EXPECT_THROW(
      nn::relative_sinusoids(0, 3, 5, 10000.0, nn::SinusoidLayout::kInterleaved, DType::kF32),
      Error);
}

TEST(XlEncoding, ParametersHaveEspnetNamesAndShapes) {
  Generator gen(1);
  nn::RelativeXlOptions o;
  o.heads = 3;
  o.head_dim = 4;
  const nn::RelativeXlEncoding xl(o, gen);
  const auto params = xl.named_parameters();
  ASSERT_EQ(params.size(), 3u);
  EXPECT_EQ(params[0].first, "pos_bias_u");
  EXPECT_EQ(params[1].first, "pos_bias_v");
  EXPECT_EQ(params[2].first, "linear_pos.weight");
  EXPECT_EQ(params[2].second.shape(), (Shape{12, 12}));
  EXPECT_EQ(params[0].second.shape(), (Shape{3, 4}));
  EXPECT_FALSE(xl.linear_pos().bias().defined());
}

// ---------------------------------------------------------------------------------------------
// Dropout goes through the fused kernel: reproducible from the generator, off in eval.

TEST(RelativeEncodings, DropoutFollowsTheGenerator) {
  Geometry g{"self", 2, 2, 6, 6, 4, 0};
  for (Kind kind : {Kind::kShaw, Kind::kXlInterleaved, Kind::kSkewShared}) {
    const auto enc = make_encoding(kind, g, DType::kF64, 2);
    Generator gen(9);
    const Variable q(randn({2, 2, 6, 4}, gen, 0, 1, DType::kF64));
    const Variable k(randn({2, 2, 6, 4}, gen, 0, 1, DType::kF64));
    const Variable v(randn({2, 2, 6, 4}, gen, 0, 1, DType::kF64));
    AttentionCall call = make_call(g);
    const Tensor eval = enc->attend(q, k, v, call).data();
    Generator g1(77), g2(77);
    call.training = true;
    call.dropout = 0.5;
    call.generator = &g1;
    const Tensor a = enc->attend(q, k, v, call).data();
    call.generator = &g2;
    const Tensor b = enc->attend(q, k, v, call).data();
    EXPECT_TRUE(allclose(a, b, 0, 0)) << kind_name(kind);
    EXPECT_FALSE(allclose(a, eval, 1e-6, 1e-6)) << kind_name(kind);
    call.generator = nullptr;
    EXPECT_THROW(enc->attend(q, k, v, call), Error) << kind_name(kind);
  }
}

TEST(RelativeEncodings, WrongHeadDimThrows) {
  Geometry g{"self", 1, 2, 3, 3, 4, 0};
  for (Kind kind : {Kind::kShaw, Kind::kXlInterleaved, Kind::kSkewShared}) {
    const auto enc = make_encoding(kind, g, DType::kF32, 2);
    const Variable bad(zeros({1, 2, 3, 5}));
    EXPECT_THROW(enc->attend(bad, bad, bad, {}), Error) << kind_name(kind);
  }
}

// ---------------------------------------------------------------------------------------------
// Streaming chunk attention.

TEST(ChunkVisibilityMask, MatchesTheWindowRule) {
  for (const auto& [n, c, m] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
           {11, 3, 4}, {10, 4, -1}, {9, 2, 0}, {7, 7, 0}, {5, 8, 2}}) {
    const Tensor mask = nn::chunk_visibility_mask(n, c, m);
    for (int64_t p = 0; p < n; ++p)
      for (int64_t j = 0; j < n; ++j) {
        const int64_t chunk = p / c;
        const bool in_window =
            j < std::min(n, (chunk + 1) * c) && (m < 0 || j >= std::max<int64_t>(0, chunk * c - m));
        EXPECT_EQ(mask.at({p, j}), in_window ? 1.0 : 0.0) << n << c << m << " " << p << "," << j;
      }
  }
  // WeNet's subsequent_chunk_mask(size, chunk, num_left_chunks) is the case M = left·C.
  const Tensor wenet = nn::chunk_visibility_mask(8, 2, 2 * 1);
  EXPECT_EQ(wenet.at({5, 1}), 0.0);  // chunk 2 starts at 4, one left chunk reaches back to 2
  EXPECT_EQ(wenet.at({5, 2}), 1.0);
  EXPECT_EQ(wenet.at({4, 5}), 1.0);
  EXPECT_EQ(wenet.at({4, 6}), 0.0);
}

struct StreamCase {
  std::string name;
  int64_t n, chunk, memory;
  bool causal;
};

class StreamingChunk : public ::testing::TestWithParam<StreamCase> {};

TEST_P(StreamingChunk, ChunkByChunkEqualsMaskedFullAttention) {
  const StreamCase& c = GetParam();
  for (DType dtype : {DType::kF64, DType::kF32}) {
    Generator gen(21);
    nn::StreamingChunkAttentionOptions o;
    o.dim = 8;
    o.heads = 2;
    o.chunk_size = c.chunk;
    o.memory = c.memory;
    o.causal = c.causal;
    o.dtype = dtype;
    nn::StreamingChunkAttention layer(o, gen);
    layer.eval();
    Generator pg(22);  // non-zero u and v
    for (const auto& [name, p] : layer.named_parameters()) {
      if (name.find("pos_bias") != std::string::npos)
        Tensor(p.data()).copy_from(randn(p.shape(), pg, 0.0, 0.5, dtype));
    }
    const Variable x(randn({2, c.n, 8}, gen, 0.0, 1.0, dtype));
    const Tensor full = layer.forward(x).data();

    nn::StreamingChunkCache cache;
    std::vector<Variable> pieces;
    for (int64_t c0 = 0; c0 < c.n; c0 += c.chunk) {
      const int64_t len = std::min(c.chunk, c.n - c0);
      pieces.push_back(layer.forward_chunk(narrow(x, 1, c0, len), cache));
      const int64_t expected_cache = c.memory < 0 ? c0 + len : std::min(c.memory, c0 + len);
      EXPECT_EQ(cache.k.defined() ? cache.k.size(2) : 0, expected_cache);
      EXPECT_EQ(cache.position, c0 + len);
    }
    const Tensor streamed = concat(pieces, 1).data();
    const double tol = dtype == DType::kF64 ? 1e-12 : 1e-5;
    EXPECT_TRUE(allclose(streamed, full, tol, tol)) << dtype_name(dtype);
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, StreamingChunk,
                         ::testing::Values(StreamCase{"n11_c3_m4", 11, 3, 4, false},
                                           StreamCase{"n10_c4_unlimited", 10, 4, -1, false},
                                           StreamCase{"n9_c2_m0", 9, 2, 0, false},
                                           StreamCase{"n7_c7_m0", 7, 7, 0, false},
                                           StreamCase{"n11_c3_m6_causal", 11, 3, 6, true},
                                           StreamCase{"n8_c3_m2_causal", 8, 3, 2, true}),
                         [](const ::testing::TestParamInfo<StreamCase>& info) {
                           return info.param.name;
                         });

TEST(StreamingChunkAttention, FullFormIsXlAttentionUnderTheChunkMask) {
  // The full form's rows equal the per-(i, j) XL formula with the chunk window as visibility.
  Generator gen(3);
  nn::StreamingChunkAttentionOptions o;
  o.dim = 8;
  o.heads = 2;
  o.chunk_size = 3;
  o.memory = 2;
  o.dtype = DType::kF64;
  nn::StreamingChunkAttention layer(o, gen);
  const Variable x(randn({1, 7, 8}, gen, 0.0, 1.0, DType::kF64));
  const Tensor out = layer.forward(x).data();
  // Recompute: heads, XL formula loop, merge, out_proj.
  auto heads = [&](const Variable& y) { return permute(reshape(y, {1, 7, 2, 4}), {0, 2, 1, 3}); };
  AttentionCall call;
  call.scale = 0.5;
  call.visibility_mask = nn::chunk_visibility_mask(7, 3, 2);
  const auto& linear = [&](const std::string& name, const Variable& in) {
    for (const auto& [n, child] : layer.named_children())
      if (n == name) return dynamic_cast<const nn::Linear&>(*child).forward(in);
    return Variable();
  };
  const Tensor qh = contiguous(heads(linear("q_proj", x))).data();
  const Tensor kh = contiguous(heads(linear("k_proj", x))).data();
  const Tensor vh = contiguous(heads(linear("v_proj", x))).data();
  const Formula f = formula(Kind::kXlInterleaved, layer.rel_pos(), qh, kh, 0);
  const Tensor attn = reference(call, 7, vh, f.score);
  const Variable merged = reshape(permute(Variable(attn), {0, 2, 1, 3}), {1, 7, 8});
  EXPECT_TRUE(allclose(out, linear("out_proj", merged).data(), 1e-12, 1e-12));
}

TEST(StreamingChunkAttention, ChunkMisuseThrows) {
  Generator gen(3);
  nn::StreamingChunkAttentionOptions o;
  o.dim = 8;
  o.heads = 2;
  o.chunk_size = 3;
  nn::StreamingChunkAttention layer(o, gen);
  nn::StreamingChunkCache cache;
  EXPECT_THROW(layer.forward_chunk(Variable(zeros({1, 4, 8})), cache), Error);  // n > C
  layer.forward_chunk(Variable(zeros({1, 2, 8})), cache);  // a short chunk ends the stream
  EXPECT_THROW(layer.forward_chunk(Variable(zeros({1, 3, 8})), cache), Error);
  o.dropout = 0.1;
  EXPECT_THROW(nn::StreamingChunkAttention(o, gen), Error);  // dropout needs a generator
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
