// Fused softmax attention kernels against a naive per-(b, h, i, j) double loop of the formula.
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "framework/backend/cpu/parallel.h"
#include "framework/backend/fused/softmax_attention.h"
#include "framework/tensor/random.h"
#include "framework/tensor/storage.h"
#include "tests/support/allclose.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

using backend::SoftmaxAttentionMasks;
using testing::allclose;

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

enum class BiasKind { kNone, kDense, kToeplitz };

struct Case {
  std::string name;
  int64_t b, h, nq, nk, d, dv;
  bool causal = false;
  int64_t off = 0;
  BiasKind bias = BiasKind::kNone;
  Shape bias_shape = {};  // for kDense: any shape broadcastable to [B, H, Nq, Nk]
  bool key_padding = false;
  bool visibility = false;
};

struct Inputs {
  Tensor q, k, v, bias, table;  // table: the [H, Nq+Nk−1] source of a Toeplitz bias
  SoftmaxAttentionMasks masks;
  double scale = 0;
};

Inputs make_inputs(const Case& c, DType dtype, uint64_t seed) {
  Generator gen(seed);
  Inputs in;
  in.q = randn({c.b, c.h, c.nq, c.d}, gen, 0, 1, dtype);
  in.k = randn({c.b, c.h, c.nk, c.d}, gen, 0, 1, dtype);
  in.v = randn({c.b, c.h, c.nk, c.dv}, gen, 0, 1, dtype);
  in.scale = 1.0 / std::sqrt(static_cast<double>(std::max<int64_t>(1, c.d)));
  if (c.bias == BiasKind::kDense) in.bias = randn(c.bias_shape, gen, 0, 1, dtype);
  if (c.bias == BiasKind::kToeplitz) {
    in.table = randn({c.h, c.nq + c.nk - 1}, gen, 0, 1, dtype);
    in.bias = backend::relative_bias_view(in.table, c.nq, c.nk);
  }
  in.masks.causal = c.causal;
  in.masks.query_offset = c.off;
  if (c.key_padding) {  // random padding, i64 mask: ~25% of keys hidden
    in.masks.key_padding_mask = randint({c.b, c.nk}, gen, 0, 4, DType::kI64);
  }
  if (c.visibility) in.masks.visibility_mask = randint({c.nq, c.nk}, gen, 0, 3, DType::kF32);
  return in;
}

// The bias element (b, h, i, j), read independently of the kernel: dense biases by NumPy
// broadcasting rules on a plain copy, Toeplitz biases straight from their table.
struct BiasReader {
  const Case& c;
  std::vector<double> values;
  Shape shape4;
  double operator()(int64_t b, int64_t h, int64_t i, int64_t j) const {
    if (c.bias == BiasKind::kNone) return 0.0;
    if (c.bias == BiasKind::kToeplitz) return values[h * (c.nq + c.nk - 1) + (j - i + c.nq - 1)];
    const int64_t idx[4] = {b, h, i, j};
    int64_t flat = 0;
    for (int d = 0; d < 4; ++d) flat = flat * shape4[d] + (shape4[d] == 1 ? 0 : idx[d]);
    return values[flat];
  }
  // Flat index in the bias's own (contiguous, 4-D padded) layout, for the gradient.
  int64_t grad_index(int64_t b, int64_t h, int64_t i, int64_t j) const {
    const int64_t idx[4] = {b, h, i, j};
    int64_t flat = 0;
    for (int d = 0; d < 4; ++d) flat = flat * shape4[d] + (shape4[d] == 1 ? 0 : idx[d]);
    return flat;
  }
};

BiasReader bias_reader(const Case& c, const Inputs& in) {
  BiasReader r{c, {}, Shape(4, 1)};
  if (c.bias == BiasKind::kDense) {
    r.values = in.bias.contiguous().to_double_vector();
    const int64_t pad = 4 - static_cast<int64_t>(c.bias_shape.size());
    for (size_t d = 0; d < c.bias_shape.size(); ++d) r.shape4[pad + d] = c.bias_shape[d];
  }
  if (c.bias == BiasKind::kToeplitz) {
    r.values = in.table.to_double_vector();
    r.shape4 = {1, c.h, c.nq, c.nk};
  }
  return r;
}

struct Naive {
  std::vector<double> out, lse, dq, dk, dv, dbias;
};

// Defining formula per (b, h, i), in double:
//   ℓ_ij = s·q_i·k_j + bias_ij, −inf where hidden (causal j > off + i, padding, visibility);
//   p = softmax_j ℓ (all hidden: p = 0, lse = −inf); out_i = Σ_j p_ij·M_ij·v_j (M: dropout).
// With g (upstream), the gradient of Σ g·out by the chain rule written out entry by entry.
Naive naive(const Case& c, const Inputs& in, const std::vector<double>& g = {},
            const std::vector<double>& dropout = {}) {
  const std::vector<double> q = in.q.to_double_vector(), k = in.k.to_double_vector(),
                            v = in.v.to_double_vector();
  const BiasReader bias = bias_reader(c, in);
  std::vector<double> pad, vis;
  if (c.key_padding) pad = in.masks.key_padding_mask.to_double_vector();
  if (c.visibility) vis = in.masks.visibility_mask.to_double_vector();
  Naive r;
  r.out.assign(c.b * c.h * c.nq * c.dv, 0.0);
  r.lse.assign(c.b * c.h * c.nq, kNegInf);
  r.dq.assign(in.q.numel(), 0.0);
  r.dk.assign(in.k.numel(), 0.0);
  r.dv.assign(in.v.numel(), 0.0);
  r.dbias.assign(c.bias == BiasKind::kNone ? 0 : shape_numel(bias.shape4), 0.0);
  for (int64_t b = 0; b < c.b; ++b) {
    for (int64_t h = 0; h < c.h; ++h) {
      const int64_t s = b * c.h + h;
      for (int64_t i = 0; i < c.nq; ++i) {
        std::vector<double> logit(c.nk, kNegInf);
        double mx = kNegInf;
        for (int64_t j = 0; j < c.nk; ++j) {
          const bool hidden = (c.causal && j > c.off + i) ||
                              (!pad.empty() && pad[b * c.nk + j] == 0) ||
                              (!vis.empty() && vis[i * c.nk + j] == 0);
          if (hidden) continue;
          double dot = 0;
          for (int64_t x = 0; x < c.d; ++x)
            dot += q[(s * c.nq + i) * c.d + x] * k[(s * c.nk + j) * c.d + x];
          logit[j] = in.scale * dot + bias(b, h, i, j);
          mx = std::max(mx, logit[j]);
        }
        if (mx == kNegInf) continue;  // every key hidden
        double z = 0;
        for (int64_t j = 0; j < c.nk; ++j) z += std::exp(logit[j] - mx);
        r.lse[s * c.nq + i] = mx + std::log(z);
        std::vector<double> p(c.nk), m(c.nk, 1.0);
        for (int64_t j = 0; j < c.nk; ++j) {
          p[j] = std::exp(logit[j] - mx) / z;
          if (!dropout.empty()) m[j] = dropout[(s * c.nq + i) * c.nk + j];
          for (int64_t x = 0; x < c.dv; ++x)
            r.out[(s * c.nq + i) * c.dv + x] += p[j] * m[j] * v[(s * c.nk + j) * c.dv + x];
        }
        if (g.empty()) continue;
        // dL/dp_ij = M_ij·g_i·v_j; dL/dℓ_ij = p_ij (dp_ij − Σ_j' p_ij' dp_ij').
        std::vector<double> dp(c.nk, 0.0);
        double sum_pdp = 0;
        for (int64_t j = 0; j < c.nk; ++j) {
          for (int64_t x = 0; x < c.dv; ++x)
            dp[j] += g[(s * c.nq + i) * c.dv + x] * v[(s * c.nk + j) * c.dv + x];
          dp[j] *= m[j];
          sum_pdp += p[j] * dp[j];
        }
        for (int64_t j = 0; j < c.nk; ++j) {
          const double dl = p[j] * (dp[j] - sum_pdp);
          for (int64_t x = 0; x < c.d; ++x) {
            r.dq[(s * c.nq + i) * c.d + x] += in.scale * dl * k[(s * c.nk + j) * c.d + x];
            r.dk[(s * c.nk + j) * c.d + x] += in.scale * dl * q[(s * c.nq + i) * c.d + x];
          }
          for (int64_t x = 0; x < c.dv; ++x)
            r.dv[(s * c.nk + j) * c.dv + x] += p[j] * m[j] * g[(s * c.nq + i) * c.dv + x];
          if (c.bias != BiasKind::kNone) r.dbias[bias.grad_index(b, h, i, j)] += dl;
        }
      }
    }
  }
  return r;
}

Tensor as_tensor(const std::vector<double>& values, const Shape& shape) {
  return tensor_from(values, shape, DType::kF64);
}

// lse with −inf rows: compare the pattern of −inf exactly and the finite values with tolerance.
::testing::AssertionResult lse_matches(const Tensor& actual, const std::vector<double>& expected,
                                       double tol) {
  const std::vector<double> a = actual.to_double_vector();
  if (a.size() != expected.size()) return ::testing::AssertionFailure() << "lse size differs";
  for (size_t i = 0; i < a.size(); ++i) {
    const bool inf_a = std::isinf(a[i]) && a[i] < 0, inf_e = std::isinf(expected[i]);
    if (inf_a != inf_e ||
        (!inf_e && std::abs(a[i] - expected[i]) > tol * (1 + std::abs(expected[i]))))
      return ::testing::AssertionFailure()
             << "lse[" << i << "] = " << a[i] << ", expected " << expected[i];
  }
  return ::testing::AssertionSuccess();
}

const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      {"SelfFull", 2, 3, 7, 7, 5, 4},
      {"SelfCausalAcrossTiles", 1, 2, 67, 67, 8, 6, true, 0, BiasKind::kDense, {1, 2, 67, 67}},
      {"CrossStartAligned", 2, 2, 5, 9, 4, 3, false, 0, BiasKind::kDense, {2, 1, 1, 9}, true},
      {"CrossEndAlignedCausal", 2, 2, 5, 9, 4, 4, true, 4, BiasKind::kDense, {5, 9}},
      {"CrossLongCausalVisibility",
       1,
       2,
       70,
       133,
       6,
       5,
       true,
       63,
       BiasKind::kDense,
       {1, 2, 70, 133},
       false,
       true},
      {"CrossQueriesLonger", 2, 1, 11, 4, 3, 2, false, 0, BiasKind::kDense, {2, 1, 11, 4}},
      {"NegativeOffsetHidesRows", 1, 2, 6, 6, 4, 3, true, -2},
      {"PaddingAndVisibility",
       2,
       2,
       5,
       5,
       3,
       3,
       false,
       0,
       BiasKind::kDense,
       {1, 1, 5, 1},
       true,
       true},
      {"ToeplitzBiasCausal", 2, 3, 9, 13, 4, 4, true, 4, BiasKind::kToeplitz},
      {"ToeplitzBiasFull", 1, 2, 70, 66, 5, 3, false, 0, BiasKind::kToeplitz},
      {"BiasPerHeadRow", 2, 3, 7, 8, 4, 2, false, 0, BiasKind::kDense, {3, 1, 8}},
      {"SingleQueryDecode", 2, 2, 1, 12, 4, 4, true, 11, BiasKind::kDense, {2, 2, 1, 12}, true},
      {"OddHeadDims", 1, 1, 3, 129, 1, 7, false, 0, BiasKind::kNone, {}, true},
  };
  return all;
}

class SoftmaxAttentionKernel : public ::testing::TestWithParam<Case> {};

TEST_P(SoftmaxAttentionKernel, ForwardMatchesNaiveLoop) {
  const Case& c = GetParam();
  for (DType dtype : {DType::kF64, DType::kF32}) {
    const double tol = dtype == DType::kF64 ? 1e-12 : 2e-5;
    const Inputs in = make_inputs(c, dtype, 17 + c.nq * 31 + c.nk);
    const Naive ref = naive(c, in);
    const auto res =
        backend::softmax_attention_forward(in.q, in.k, in.v, in.bias, in.scale, in.masks);
    EXPECT_TRUE(allclose(res.out, as_tensor(ref.out, {c.b, c.h, c.nq, c.dv}), tol, tol))
        << dtype_name(dtype);
    EXPECT_TRUE(lse_matches(res.logsumexp, ref.lse, tol)) << dtype_name(dtype);
  }
}

TEST_P(SoftmaxAttentionKernel, BackwardMatchesNaiveLoop) {
  const Case& c = GetParam();
  for (DType dtype : {DType::kF64, DType::kF32}) {
    const double tol = dtype == DType::kF64 ? 1e-11 : 1e-4;
    const Inputs in = make_inputs(c, dtype, 5 + c.nq * 7 + c.nk);
    Generator gen(99);
    const Tensor g = randn({c.b, c.h, c.nq, c.dv}, gen, 0, 1, dtype);
    const Naive ref = naive(c, in, g.to_double_vector());
    const auto res =
        backend::softmax_attention_forward(in.q, in.k, in.v, in.bias, in.scale, in.masks);
    const auto grads = backend::softmax_attention_backward(in.q, in.k, in.v, in.bias, in.scale,
                                                           in.masks, res.out, res.logsumexp, g);
    EXPECT_TRUE(allclose(grads.dq, as_tensor(ref.dq, in.q.shape()), tol, tol)) << "dq";
    EXPECT_TRUE(allclose(grads.dk, as_tensor(ref.dk, in.k.shape()), tol, tol)) << "dk";
    EXPECT_TRUE(allclose(grads.dv, as_tensor(ref.dv, in.v.shape()), tol, tol)) << "dv";
    if (c.bias == BiasKind::kNone) {
      EXPECT_FALSE(grads.dbias.defined());
    } else {
      ASSERT_TRUE(grads.dbias.defined());
      EXPECT_EQ(grads.dbias.shape(), in.bias.shape());
      EXPECT_TRUE(allclose(grads.dbias, as_tensor(ref.dbias, in.bias.shape()), tol, tol))
          << "dbias";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Geometries, SoftmaxAttentionKernel, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return info.param.name;
                         });

TEST(SoftmaxAttentionKernel, FullyHiddenRowsGiveZeroOutputAndGradients) {
  // Causal with off = −2: queries 0 and 1 precede every key.
  const Case c{"", 1, 2, 5, 5, 3, 3, true, -2, BiasKind::kDense, {1, 2, 5, 5}};
  const Inputs in = make_inputs(c, DType::kF64, 3);
  Generator gen(4);
  const Tensor g = randn({1, 2, 5, 3}, gen, 0, 1, DType::kF64);
  const auto res =
      backend::softmax_attention_forward(in.q, in.k, in.v, in.bias, in.scale, in.masks);
  const auto grads = backend::softmax_attention_backward(in.q, in.k, in.v, in.bias, in.scale,
                                                         in.masks, res.out, res.logsumexp, g);
  for (int64_t h = 0; h < 2; ++h) {
    for (int64_t i = 0; i < 2; ++i) {
      EXPECT_TRUE(std::isinf(res.logsumexp.at({0, h, i})));
      for (int64_t x = 0; x < 3; ++x) {
        EXPECT_EQ(res.out.at({0, h, i, x}), 0.0);
        EXPECT_EQ(grads.dq.at({0, h, i, x}), 0.0);
      }
      for (int64_t j = 0; j < 5; ++j) EXPECT_EQ(grads.dbias.at({0, h, i, j}), 0.0);
    }
    EXPECT_FALSE(std::isnan(res.out.at({0, h, 2, 0})));
  }
}

TEST(SoftmaxAttentionKernel, ReadsTransposedAndExpandedViewsInPlace) {
  const Case c{"", 2, 2, 6, 5, 4, 3};
  const Inputs in = make_inputs(c, DType::kF64, 8);
  // q as a transposed view of a [B, Nq, H, D] tensor; bias as an expanded [1, 1, 1, Nk] row.
  const Tensor q_view = in.q.permute({0, 2, 1, 3}).contiguous().permute({0, 2, 1, 3});
  ASSERT_FALSE(q_view.is_contiguous());
  Generator gen(1);
  const Tensor row = randn({1, 1, 1, 5}, gen, 0, 1, DType::kF64);
  const auto a = backend::softmax_attention_forward(q_view, in.k, in.v, row.expand({2, 2, 6, 5}),
                                                    in.scale, in.masks);
  const auto b = backend::softmax_attention_forward(in.q, in.k, in.v, row, in.scale, in.masks);
  EXPECT_TRUE(allclose(a.out, b.out, 0, 0));
}

TEST(SoftmaxAttentionKernel, RelativeBiasViewIsAToeplitzViewAndItsAdjoint) {
  Generator gen(2);
  const Tensor table = randn({3, 4 + 6 - 1}, gen, 0, 1, DType::kF64);
  const Tensor view = backend::relative_bias_view(table, 4, 6);
  ASSERT_EQ(view.shape(), Shape({1, 3, 4, 6}));
  const Tensor dense = view.contiguous();  // generic copy through the negative stride
  for (int64_t h = 0; h < 3; ++h)
    for (int64_t i = 0; i < 4; ++i)
      for (int64_t j = 0; j < 6; ++j) EXPECT_EQ(dense.at({0, h, i, j}), table.at({h, j - i + 3}));
  // ⟨view(t), a⟩ = ⟨t, adjoint(a)⟩ for a [2, 3, 4, 6] gradient (leading dim summed).
  const Tensor a = randn({2, 3, 4, 6}, gen, 0, 1, DType::kF64);
  const Tensor adj = backend::relative_bias_view_backward(a, 4, 6);
  double lhs = 0, rhs = 0;
  const auto av = a.to_double_vector(), dv = dense.to_double_vector(),
             tv = table.to_double_vector(), jv = adj.to_double_vector();
  for (size_t e = 0; e < av.size(); ++e) lhs += av[e] * dv[e % dv.size()];
  for (size_t e = 0; e < tv.size(); ++e) rhs += tv[e] * jv[e];
  EXPECT_NEAR(lhs, rhs, 1e-10);
}

TEST(SoftmaxAttentionKernel, RelativeBackwardEqualsGenericBackwardOfTheView) {
  // Per-head tables and a table shared by every head ([1, n_rel]); causal end-aligned and full.
  for (const int64_t table_rows : {3, 1}) {
    for (const bool causal : {true, false}) {
      const int64_t b = 2, h = 3, nq = 37, nk = 70, d = 4;
      Generator gen(table_rows * 10 + causal);
      const Tensor q = randn({b, h, nq, d}, gen, 0, 1, DType::kF64);
      const Tensor k = randn({b, h, nk, d}, gen, 0, 1, DType::kF64);
      const Tensor v = randn({b, h, nk, d}, gen, 0, 1, DType::kF64);
      const Tensor g = randn({b, h, nq, d}, gen, 0, 1, DType::kF64);
      const Tensor table = randn({table_rows, nq + nk - 1}, gen, 0, 1, DType::kF64);
      SoftmaxAttentionMasks masks;
      masks.causal = causal;
      masks.query_offset = causal ? nk - nq : 0;
      const Tensor bias = backend::relative_bias_view(table, nq, nk);
      const auto res = backend::softmax_attention_forward(q, k, v, bias, 0.5, masks, 0.1, 3);
      const auto generic = backend::softmax_attention_backward(q, k, v, bias, 0.5, masks, res.out,
                                                               res.logsumexp, g, 0.1, 3);
      const auto relative = backend::softmax_attention_backward_relative(
          q, k, v, table, 0.5, masks, res.out, res.logsumexp, g, 0.1, 3);
      EXPECT_TRUE(allclose(relative.dq, generic.dq, 0, 0));
      EXPECT_TRUE(allclose(relative.dk, generic.dk, 0, 0));
      EXPECT_TRUE(allclose(relative.dv, generic.dv, 0, 0));
      ASSERT_EQ(relative.dbias.shape(), table.shape());
      // The generic dbias has the view's shape [1, H', Nq, Nk]; its diagonal sums are dtable.
      EXPECT_TRUE(allclose(relative.dbias,
                           backend::relative_bias_view_backward(generic.dbias, nq, nk), 1e-12,
                           1e-12));
    }
  }
}

TEST(SoftmaxAttentionKernel, RejectsBadShapes) {
  const Tensor q = zeros({1, 2, 3, 4}), k = zeros({1, 2, 5, 4}), v = zeros({1, 2, 5, 3});
  SoftmaxAttentionMasks masks;
  EXPECT_THROW(backend::softmax_attention_forward(q, zeros({1, 2, 5, 3}), v, Tensor(), 1, masks),
               Error);
  EXPECT_THROW(backend::softmax_attention_forward(q, k, zeros({1, 2, 4, 3}), Tensor(), 1, masks),
               Error);
  EXPECT_THROW(backend::softmax_attention_forward(q, k, v, zeros({3, 3, 5}), 1, masks), Error);
  EXPECT_THROW(backend::softmax_attention_forward(q, k, v, zeros({3, 5}, DType::kF64), 1, masks),
               Error);
  masks.key_padding_mask = ones({1, 3});
  EXPECT_THROW(backend::softmax_attention_forward(q, k, v, Tensor(), 1, masks), Error);
  masks.key_padding_mask = Tensor();
  masks.visibility_mask = ones({5, 3});
  EXPECT_THROW(backend::softmax_attention_forward(q, k, v, Tensor(), 1, masks), Error);
  masks.visibility_mask = Tensor();
  EXPECT_THROW(backend::softmax_attention_forward(q, k, v, Tensor(), 1, masks, 1.0), Error);
  const auto res = backend::softmax_attention_forward(q, k, v, Tensor(), 1, masks);
  EXPECT_THROW(backend::softmax_attention_backward(q, k, v, Tensor(), 1, masks, res.out,
                                                   res.logsumexp, zeros({1, 2, 3, 4})),
               Error);
}

// ---- packed documents ----

// Segment ids: a query sees only the keys of its own document. The packed output and gradients
// equal each document run alone (its rows of q, k, v, bias and padding mask), causal or not.
TEST(SoftmaxAttentionKernel, PackedDocumentsEqualEachDocumentAlone) {
  Generator gen(31);
  const int64_t n = 11;
  const std::vector<std::vector<int64_t>> layout = {{4, 1, 6}, {11}};
  std::vector<double> ids;
  for (const auto& row : layout) {
    for (size_t doc = 0; doc < row.size(); ++doc) {
      for (int64_t t = 0; t < row[doc]; ++t) ids.push_back(static_cast<double>(doc));
    }
  }
  const Tensor segment_ids = tensor_from(ids, {2, n}, DType::kI64);
  const Tensor q = randn({2, 2, n, 4}, gen, 0, 1, DType::kF64);
  const Tensor k = randn({2, 2, n, 4}, gen, 0, 1, DType::kF64);
  const Tensor v = randn({2, 2, n, 3}, gen, 0, 1, DType::kF64);
  const Tensor bias = randn({1, 2, n, n}, gen, 0, 1, DType::kF64);
  const Tensor grad_out = randn({2, 2, n, 3}, gen, 0, 1, DType::kF64);
  Tensor padding = ones({2, n}, DType::kF32);
  padding.set({0, 2}, 0.0);
  for (bool causal : {true, false}) {
    SCOPED_TRACE(causal ? "causal" : "bidirectional");
    SoftmaxAttentionMasks masks;
    masks.causal = causal;
    masks.key_padding_mask = padding;
    masks.segment_ids = segment_ids;
    const auto packed = backend::softmax_attention_forward(q, k, v, bias, 0.5, masks);
    SoftmaxAttentionMasks plain = masks;
    plain.segment_ids = Tensor();
    const auto packed_no_bias = backend::softmax_attention_forward(q, k, v, Tensor(), 0.5, masks);
    const auto grads = backend::softmax_attention_backward(
        q, k, v, Tensor(), 0.5, masks, packed_no_bias.out, packed_no_bias.logsumexp, grad_out);
    for (int64_t b = 0; b < 2; ++b) {
      int64_t start = 0;
      for (int64_t len : layout[b]) {
        const auto doc = [&](const Tensor& x) {
          return x.narrow(0, b, 1).narrow(2, start, len).contiguous();
        };
        plain.key_padding_mask = padding.narrow(0, b, 1).narrow(1, start, len).contiguous();
        const Tensor doc_bias = bias.narrow(2, start, len).narrow(3, start, len).contiguous();
        const auto alone =
            backend::softmax_attention_forward(doc(q), doc(k), doc(v), doc_bias, 0.5, plain);
        EXPECT_TRUE(allclose(doc(packed.out), alone.out, 1e-12, 1e-12)) << b << " " << start;
        const auto alone_no_bias =
            backend::softmax_attention_forward(doc(q), doc(k), doc(v), Tensor(), 0.5, plain);
        const auto alone_grads = backend::softmax_attention_backward(
            doc(q), doc(k), doc(v), Tensor(), 0.5, plain, alone_no_bias.out,
            alone_no_bias.logsumexp, doc(grad_out));
        EXPECT_TRUE(allclose(doc(grads.dq), alone_grads.dq, 1e-12, 1e-12));
        EXPECT_TRUE(allclose(doc(grads.dk), alone_grads.dk, 1e-12, 1e-12));
        EXPECT_TRUE(allclose(doc(grads.dv), alone_grads.dv, 1e-12, 1e-12));
        start += len;
      }
    }
  }
  SoftmaxAttentionMasks bad;
  bad.segment_ids = zeros({2, n - 1}, DType::kI64);
  EXPECT_THROW(backend::softmax_attention_forward(q, k, v, Tensor(), 1, bad), Error);
  bad.segment_ids = zeros({2, n}, DType::kF32);
  EXPECT_THROW(backend::softmax_attention_forward(q, k, v, Tensor(), 1, bad), Error);
}

// ---- dropout ----

// The [.., 1, ..] slice at `index` of dim `dim`.
Tensor pick(const Tensor& t, int64_t dim, int64_t index) {
  return t.slice(dim, index, index + 1);
}

TEST(SoftmaxAttentionDropout, MaskIsAPureFunctionOfSeedAndIndices) {
  const double p = 0.3;
  const Tensor small = backend::softmax_attention_dropout_mask(2, 2, 5, 70, p, 42, DType::kF64);
  const Tensor big = backend::softmax_attention_dropout_mask(3, 4, 9, 130, p, 42, DType::kF64);
  // Entry (b, h, i, j) does not depend on the shape it is part of.
  EXPECT_TRUE(
      allclose(big.slice(0, 0, 2).slice(1, 0, 2).slice(2, 0, 5).slice(3, 0, 70), small, 0, 0));
  const Tensor other = backend::softmax_attention_dropout_mask(3, 4, 9, 130, p, 43, DType::kF64);
  const std::vector<double> a = big.to_double_vector(), b = other.to_double_vector();
  int64_t kept = 0, differ = 0;
  for (size_t e = 0; e < a.size(); ++e) {
    EXPECT_TRUE(a[e] == 0.0 || std::abs(a[e] - 1.0 / (1.0 - p)) < 1e-15);
    kept += a[e] != 0.0;
    differ += (a[e] != 0.0) != (b[e] != 0.0);
  }
  const double keep_rate = static_cast<double>(kept) / a.size();  // 14040 draws: σ ≈ 0.004
  EXPECT_NEAR(keep_rate, 1.0 - p, 0.02);
  EXPECT_GT(differ, static_cast<int64_t>(a.size() / 4));  // another seed, another mask
  // Every index takes part: the masks of neighbouring batches, heads, rows and columns differ.
  auto disagreement = [&](const Tensor& x, const Tensor& y) {
    const std::vector<double> xv = x.contiguous().to_double_vector(),
                              yv = y.contiguous().to_double_vector();
    int64_t n = 0;
    for (size_t e = 0; e < xv.size(); ++e) n += (xv[e] != 0.0) != (yv[e] != 0.0);
    return static_cast<double>(n) / xv.size();  // ≈ 2p(1−p) = 0.42 for independent masks
  };
  EXPECT_GT(disagreement(pick(big, 0, 0), pick(big, 0, 1)), 0.3);
  EXPECT_GT(disagreement(pick(big, 1, 0), pick(big, 1, 1)), 0.3);
  EXPECT_GT(disagreement(pick(big, 2, 0), pick(big, 2, 1)), 0.3);
  EXPECT_GT(disagreement(pick(big, 3, 0), pick(big, 3, 1)), 0.3);
}

TEST(SoftmaxAttentionDropout, KernelsApplyTheMaskToProbabilities) {
  const Case c{"", 2, 2, 9, 70, 4, 3, true, 61, BiasKind::kDense, {1, 2, 9, 70}, true};
  const double p = 0.25;
  const uint64_t seed = 1234;
  const Inputs in = make_inputs(c, DType::kF64, 21);
  const Tensor mask = backend::softmax_attention_dropout_mask(2, 2, 9, 70, p, seed, DType::kF64);
  Generator gen(5);
  const Tensor g = randn({2, 2, 9, 3}, gen, 0, 1, DType::kF64);
  const Naive ref = naive(c, in, g.to_double_vector(), mask.to_double_vector());
  const auto res =
      backend::softmax_attention_forward(in.q, in.k, in.v, in.bias, in.scale, in.masks, p, seed);
  EXPECT_TRUE(allclose(res.out, as_tensor(ref.out, {2, 2, 9, 3}), 1e-12, 1e-12));
  EXPECT_TRUE(lse_matches(res.logsumexp, ref.lse, 1e-12));  // dropout leaves lse alone
  const auto grads = backend::softmax_attention_backward(
      in.q, in.k, in.v, in.bias, in.scale, in.masks, res.out, res.logsumexp, g, p, seed);
  EXPECT_TRUE(allclose(grads.dq, as_tensor(ref.dq, in.q.shape()), 1e-11, 1e-11));
  EXPECT_TRUE(allclose(grads.dk, as_tensor(ref.dk, in.k.shape()), 1e-11, 1e-11));
  EXPECT_TRUE(allclose(grads.dv, as_tensor(ref.dv, in.v.shape()), 1e-11, 1e-11));
  EXPECT_TRUE(allclose(grads.dbias, as_tensor(ref.dbias, in.bias.shape()), 1e-11, 1e-11));
}

// Restores the thread count when a test ends.
struct ThreadCount {
  int saved = backend::num_threads();
  ~ThreadCount() { backend::set_num_threads(saved); }
};

TEST(SoftmaxAttentionDropout, ResultsDoNotDependOnTheThreadCount) {
  ThreadCount restore;
  // Bias [1, 1, Nq, Nk] is shared by every slice: the backward splits it into partial dbias
  // buffers; [1, H, Nq, 1] and no bias exercise the other groupings.
  for (const Shape& bias_shape : {Shape{1, 1, 40, 90}, Shape{1, 3, 40, 1}, Shape{}}) {
    const Case c{"",         2,   3,    40, 90,
                 16,         16,  true, 50, bias_shape.empty() ? BiasKind::kNone : BiasKind::kDense,
                 bias_shape, true};
    const Inputs in = make_inputs(c, DType::kF32, 77);
    Generator gen(6);
    const Tensor g = randn({2, 3, 40, 16}, gen, 0, 1, DType::kF32);
    std::vector<std::vector<double>> runs[2];
    for (int threads : {1, 2}) {
      backend::set_num_threads(threads);
      for (int repeat = 0; repeat < 2; ++repeat) {
        const auto res = backend::softmax_attention_forward(in.q, in.k, in.v, in.bias, in.scale,
                                                            in.masks, 0.2, 2024);
        const auto gr = backend::softmax_attention_backward(
            in.q, in.k, in.v, in.bias, in.scale, in.masks, res.out, res.logsumexp, g, 0.2, 2024);
        std::vector<double> all = res.out.to_double_vector();
        for (const Tensor& t : {gr.dq, gr.dk, gr.dv, gr.dbias}) {
          if (!t.defined()) continue;
          const auto tv = t.to_double_vector();
          all.insert(all.end(), tv.begin(), tv.end());
        }
        runs[threads - 1].push_back(all);
      }
    }
    EXPECT_EQ(runs[0][0], runs[0][1]) << "not deterministic on 1 thread";
    EXPECT_EQ(runs[1][0], runs[1][1]) << "not deterministic on 2 threads";
    EXPECT_EQ(runs[0][0], runs[1][0]) << "1 and 2 threads differ";
  }
}

// ---- memory ----

// The forward keeps only out [B, H, N, Dv] and logsumexp [B, H, N]; the backward allocates
// dq, dk, dv and per-thread tiles, never an N×N buffer. At N = 2048 one N×N f32 matrix per
// slice would be 16 MiB; the whole forward must stay within a few O(N·D) buffers.
TEST(SoftmaxAttentionMemory, PeakExtraMemoryIsLinearInN) {
  const int64_t b = 1, h = 2, n = 2048, d = 32;
  Generator gen(11);
  const Tensor q = randn({b, h, n, d}, gen), k = randn({b, h, n, d}, gen),
               v = randn({b, h, n, d}, gen);
  SoftmaxAttentionMasks masks;
  masks.causal = true;
  const int64_t out_bytes = b * h * n * d * 4, lse_bytes = b * h * n * 4;
  const int64_t n2_bytes = n * n * 4;

  reset_storage_peak();
  const int64_t before = storage_stats().live_bytes;
  const auto res = backend::softmax_attention_forward(q, k, v, Tensor(), 0.125, masks);
  const int64_t forward_extra = storage_stats().peak_bytes - before;
  EXPECT_LE(forward_extra, out_bytes + lse_bytes + 4096);
  EXPECT_LT(forward_extra, n2_bytes / 16);

  const Tensor g = randn({b, h, n, d}, gen);
  reset_storage_peak();
  const int64_t before_backward = storage_stats().live_bytes;
  const auto grads = backend::softmax_attention_backward(q, k, v, Tensor(), 0.125, masks, res.out,
                                                         res.logsumexp, g);
  const int64_t backward_extra = storage_stats().peak_bytes - before_backward;
  EXPECT_LE(backward_extra, 3 * out_bytes + 4096);  // dq, dk, dv
  EXPECT_LT(backward_extra, n2_bytes / 4);
  EXPECT_FALSE(std::isnan(grads.dq.at({0, 1, n - 1, 0})));
  // A T5 / ALiBi style Toeplitz bias: the relative backward keeps no bias-shaped buffer.
  const Tensor table = randn({h, 2 * n - 1}, gen);
  const Tensor toeplitz = backend::relative_bias_view(table, n, n);
  const auto res_rel = backend::softmax_attention_forward(q, k, v, toeplitz, 0.125, masks);
  reset_storage_peak();
  const int64_t before_relative = storage_stats().live_bytes;
  const auto grads_rel = backend::softmax_attention_backward_relative(
      q, k, v, table, 0.125, masks, res_rel.out, res_rel.logsumexp, g);
  const int64_t relative_extra = storage_stats().peak_bytes - before_relative;
  EXPECT_LE(relative_extra, 3 * out_bytes + 8 * table.numel() * 4 + 4096);  // + a few tables
  EXPECT_LT(relative_extra, n2_bytes / 4);
  EXPECT_EQ(grads_rel.dbias.shape(), table.shape());
  std::printf(
      "[ memory ] N = %lld, B·H = %lld, D = %lld: forward extra %lld B, backward extra %lld B "
      "(%lld B with a Toeplitz bias), one N×N f32 matrix %lld B\n",
      static_cast<long long>(n), static_cast<long long>(b * h), static_cast<long long>(d),
      static_cast<long long>(forward_extra), static_cast<long long>(backward_extra),
      static_cast<long long>(relative_extra), static_cast<long long>(n2_bytes));
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
