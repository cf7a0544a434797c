// Linear attention kernels: chunked == quadratic == recurrent == a naive double loop.
#include <cmath>

#include <gtest/gtest.h>

#include "framework/backend/fused/linear_attention.h"
#include "framework/tensor/random.h"
#include "tests/support/allclose.h"
#include "tests/support/tensor_factory.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

using testing::allclose;
using testing::random_qkv;

// Plain definition, in double: o[g,i,:] = Σ_{j≤i (causal) or all j} (q_i·k_j) m_j v_j.
Tensor naive_attention(const Tensor& q, const Tensor& k, const Tensor& v, bool causal,
                       const std::vector<double>& key_mask = {}, int64_t heads = 1) {
  const int64_t n = q.size(-2), f = q.size(-1), d = v.size(-1);
  const int64_t groups = q.numel() / (n * f);
  const std::vector<double> qv = q.to_double_vector(), kv = k.to_double_vector(),
                            vv = v.to_double_vector();
  std::vector<double> o(groups * n * d, 0.0);
  for (int64_t g = 0; g < groups; ++g) {
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        if (causal && j > i) continue;
        if (!key_mask.empty() && key_mask[(g / heads) * n + j] == 0) continue;
        double s = 0;
        for (int64_t x = 0; x < f; ++x) s += qv[(g * n + i) * f + x] * kv[(g * n + j) * f + x];
        for (int64_t x = 0; x < d; ++x) o[(g * n + i) * d + x] += s * vv[(g * n + j) * d + x];
      }
    }
  }
  return tensor_from(o, v.shape(), DType::kF64);
}

double abs_sum(const Tensor& t) {
  double s = 0;
  for (double x : t.to_double_vector()) s += std::abs(x);
  return s;
}

struct Case {
  int64_t b, h, n, f, d, chunk;
};

class CausalForms : public ::testing::TestWithParam<Case> {};

TEST_P(CausalForms, ChunkedQuadraticRecurrentAndNaiveAgree) {
  const Case c = GetParam();
  Generator gen(c.n * 131 + c.chunk);
  const auto [q, k, v] = random_qkv(gen, c.b, c.h, c.n, c.f, c.d);
  const Tensor expected = naive_attention(q, k, v, /*causal=*/true);
  EXPECT_TRUE(
      allclose(backend::causal_linear_attention_forward(q, k, v, c.chunk), expected, 1e-10, 1e-10));
  EXPECT_TRUE(
      allclose(backend::causal_linear_attention_quadratic(q, k, v), expected, 1e-10, 1e-10));
  // Recurrent: one token at a time with a carried state.
  const int64_t groups = c.b * c.h;
  Tensor state = zeros({groups, c.f, c.d}, DType::kF64);
  const Tensor q3 = q.reshape({groups, c.n, c.f});
  const Tensor k3 = k.reshape({groups, c.n, c.f});
  const Tensor v3 = v.reshape({groups, c.n, c.d});
  Tensor recurrent = Tensor::empty({groups, c.n, c.d}, DType::kF64);
  for (int64_t t = 0; t < c.n; ++t) {
    const Tensor o = backend::causal_linear_attention_step(q3.slice(1, t, t + 1).squeeze(1),
                                                           k3.slice(1, t, t + 1).squeeze(1),
                                                           v3.slice(1, t, t + 1).squeeze(1), state);
    recurrent.slice(1, t, t + 1).squeeze(1).copy_from(o);
  }
  EXPECT_TRUE(allclose(recurrent.reshape(v.shape()), expected, 1e-10, 1e-10));
}

INSTANTIATE_TEST_SUITE_P(Shapes, CausalForms,
                         ::testing::Values(Case{1, 1, 7, 4, 3, 3},   // N not divisible by C
                                           Case{2, 3, 5, 4, 4, 16},  // N < C
                                           Case{1, 2, 9, 3, 5, 1},   // C = 1 (pure recurrence)
                                           Case{2, 2, 16, 8, 8, 4},  // several full chunks
                                           Case{1, 1, 13, 5, 7,
                                                13},  // one chunk = whole sequence, odd D
                                           Case{3, 1, 1, 2, 2, 64}),  // N = 1
                         [](const ::testing::TestParamInfo<Case>& info) {
                           const Case& c = info.param;
                           return "B" + std::to_string(c.b) + "H" + std::to_string(c.h) + "N" +
                                  std::to_string(c.n) + "F" + std::to_string(c.f) + "D" +
                                  std::to_string(c.d) + "C" + std::to_string(c.chunk);
                         });

TEST(CausalLinearAttention, BackwardIndependentOfChunkSize) {
  Generator gen(3);
  const auto [q, k, v] = random_qkv(gen, 2, 2, 11, 6, 5);
  const Tensor g = randn({2, 2, 11, 5}, gen, 0, 1, DType::kF64);
  // chunk = N is the pure masked form, chunk = 1 the pure state recurrence.
  const auto ref = backend::causal_linear_attention_backward(q, k, v, g, 11);
  for (int64_t chunk : {1, 2, 4, 7, 64}) {
    const auto got = backend::causal_linear_attention_backward(q, k, v, g, chunk);
    EXPECT_TRUE(allclose(got.dq, ref.dq, 1e-10, 1e-10)) << "chunk " << chunk;
    EXPECT_TRUE(allclose(got.dk, ref.dk, 1e-10, 1e-10)) << "chunk " << chunk;
    EXPECT_TRUE(allclose(got.dv, ref.dv, 1e-10, 1e-10)) << "chunk " << chunk;
  }
}

TEST(CausalLinearAttention, DecayedFormsAgree) {
  // o_i = Σ_{j≤i} γ_h^(i−j) (q_i·k_j) v_j, checked against a direct double loop, across chunk
  // sizes, and token by token with the decayed recurrence S = γ S + kᵀ v.
  Generator gen(17);
  const int64_t b = 2, h = 3, n = 13, f = 4, d = 3;
  const auto [q, k, v] = random_qkv(gen, b, h, n, f, d);
  const std::vector<double> gamma = {0.9, 0.5, 1.0};
  const Tensor decay = tensor_from(gamma, {h}, DType::kF64);
  std::vector<double> expected(b * h * n * d, 0.0);
  for (int64_t g = 0; g < b * h; ++g) {
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j <= i; ++j) {
        double sc = 0;
        for (int64_t x = 0; x < f; ++x)
          sc += q.at({g / h, g % h, i, x}) * k.at({g / h, g % h, j, x});
        sc *= std::pow(gamma[g % h], static_cast<double>(i - j));
        for (int64_t x = 0; x < d; ++x)
          expected[(g * n + i) * d + x] += sc * v.at({g / h, g % h, j, x});
      }
    }
  }
  const Tensor want = tensor_from(expected, {b, h, n, d}, DType::kF64);
  for (int64_t chunk : {1, 4, 13, 64}) {
    EXPECT_TRUE(allclose(backend::causal_linear_attention_forward(q, k, v, chunk, decay), want,
                         1e-10, 1e-10))
        << "chunk " << chunk;
  }
  Tensor state = zeros({b * h, f, d}, DType::kF64);
  for (int64_t t = 0; t < n; ++t) {
    const Tensor o = backend::causal_linear_attention_step(
        q.reshape({b * h, n, f}).slice(1, t, t + 1).squeeze(1),
        k.reshape({b * h, n, f}).slice(1, t, t + 1).squeeze(1),
        v.reshape({b * h, n, d}).slice(1, t, t + 1).squeeze(1), state, decay);
    EXPECT_TRUE(
        allclose(o, want.reshape({b * h, n, d}).slice(1, t, t + 1).squeeze(1), 1e-10, 1e-10));
  }
  const Tensor g = randn({b, h, n, d}, gen, 0, 1, DType::kF64);
  const auto ref = backend::causal_linear_attention_backward(q, k, v, g, n, decay);
  for (int64_t chunk : {1, 3, 5}) {
    const auto got = backend::causal_linear_attention_backward(q, k, v, g, chunk, decay);
    EXPECT_TRUE(allclose(got.dq, ref.dq, 1e-10, 1e-10));
    EXPECT_TRUE(allclose(got.dk, ref.dk, 1e-10, 1e-10));
    EXPECT_TRUE(allclose(got.dv, ref.dv, 1e-10, 1e-10));
  }
}

TEST(CausalLinearAttention, FloatMatchesDouble) {
  Generator gen(5);
  const auto [q, k, v] = random_qkv(gen, 2, 2, 37, 8, 8);
  const Tensor o64 = backend::causal_linear_attention_forward(q, k, v, 16);
  const Tensor o32 = backend::causal_linear_attention_forward(q.to(DType::kF32), k.to(DType::kF32),
                                                              v.to(DType::kF32), 16);
  EXPECT_TRUE(allclose(o32, o64.to(DType::kF32), 1e-4, 1e-4));
}

TEST(BidirectionalLinearAttention, MatchesNaiveWithAndWithoutMask) {
  Generator gen(9);
  const int64_t b = 2, h = 3, n = 6, f = 4, d = 5;
  const auto [q, k, v] = random_qkv(gen, b, h, n, f, d);
  EXPECT_TRUE(allclose(backend::bidirectional_linear_attention_forward(q, k, v),
                       naive_attention(q, k, v, false), 1e-10, 1e-10));
  const std::vector<double> mask = {1, 1, 1, 1, 0, 0, 1, 1, 0, 0, 0, 0};
  const Tensor mask_t = tensor_from(mask, {b, n}, DType::kF32);
  EXPECT_TRUE(allclose(backend::bidirectional_linear_attention_forward(q, k, v, mask_t),
                       naive_attention(q, k, v, false, mask, h), 1e-10, 1e-10));
}

TEST(BidirectionalLinearAttention, PaddedKeysDoNotChangeTheOutput) {
  // Whatever sits in padded positions must not leak into real positions' outputs.
  Generator gen(10);
  const auto [q, k, v] = random_qkv(gen, 1, 2, 5, 3, 4);
  const Tensor mask = tensor_from({1, 1, 1, 0, 0}, {1, 5}, DType::kF32);
  const Tensor before = backend::bidirectional_linear_attention_forward(q, k, v, mask);
  Tensor k2 = k.clone(), v2 = v.clone();
  k2.slice(2, 3, 5).copy_from(randn({1, 2, 2, 3}, gen, 0, 100, DType::kF64));
  v2.slice(2, 3, 5).copy_from(randn({1, 2, 2, 4}, gen, 0, 100, DType::kF64));
  const Tensor after = backend::bidirectional_linear_attention_forward(q, k2, v2, mask);
  EXPECT_TRUE(allclose(after, before, 1e-12, 1e-12));
  const Tensor g = randn({1, 2, 5, 4}, gen, 0, 1, DType::kF64);
  const auto grads = backend::bidirectional_linear_attention_backward(q, k2, v2, g, mask);
  EXPECT_EQ(abs_sum(grads.dk.slice(2, 3, 5)), 0.0);
  EXPECT_EQ(abs_sum(grads.dv.slice(2, 3, 5)), 0.0);
}

TEST(LinearAttention, ShapeErrorsNameTheOp) {
  EXPECT_THROW(
      {
        try {
          backend::causal_linear_attention_forward(zeros({2, 3, 4}), zeros({2, 3, 5}),
                                                   zeros({2, 3, 4}));
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("causal_linear_attention"), std::string::npos);
          throw;
        }
      },
      Error);
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
