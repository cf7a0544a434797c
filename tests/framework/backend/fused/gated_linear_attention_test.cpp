// Gated linear attention kernels (f64): chunked == quadratic == step == a naive per-token loop,
// backward against the pair-sum definitions, zero gates == the plain kernel, refused inputs.
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "framework/backend/fused/gated_linear_attention.h"
#include "framework/backend/fused/linear_attention.h"
#include "framework/tensor/random.h"
#include "tests/support/allclose.h"
#include "tests/support/expect_error.h"
#include "tests/support/tensor_factory.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

using testing::allclose;
using testing::expect_error;
using testing::random_qkv;

// The recurrence itself, token by token in double: S = diag(e^g_t) S + k_tᵀ v_t, o_t = q_t S.
// q, k [..., N, F], v [..., N, D], gate [..., N, F|1] → [..., N, D] (f64).
Tensor naive_recurrence(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& gate) {
  const int64_t n = q.size(-2), f = q.size(-1), d = v.size(-1), gw = gate.size(-1);
  const int64_t groups = q.numel() / (n * f);
  const std::vector<double> qv = q.to_double_vector(), kv = k.to_double_vector(),
                            vv = v.to_double_vector(), gv = gate.to_double_vector();
  std::vector<double> o(groups * n * d, 0.0);
  for (int64_t g = 0; g < groups; ++g) {
    std::vector<double> s(f * d, 0.0);
    for (int64_t t = 0; t < n; ++t) {
      const int64_t row = g * n + t;
      for (int64_t x = 0; x < f; ++x) {
        const double a = std::exp(gv[row * gw + (gw == 1 ? 0 : x)]);
        for (int64_t y = 0; y < d; ++y)
          s[x * d + y] = a * s[x * d + y] + kv[row * f + x] * vv[row * d + y];
      }
      for (int64_t x = 0; x < f; ++x) {
        for (int64_t y = 0; y < d; ++y) o[row * d + y] += qv[row * f + x] * s[x * d + y];
      }
    }
  }
  return tensor_from(o, v.shape(), DType::kF64);
}

struct NaiveGrads {
  Tensor dq, dk, dv, dgate;
};

// The gradients from the pair form o_i = Σ_{j≤i} Σ_f q_if k_jf E_ijf v_j, E_ijf = e^(b_if − b_jf),
// written out pair by pair (not through the kernel's identity for the gate):
// dq_if = Σ_{j≤i} dP_ij k_jf E_ijf, dk_jf = Σ_{i≥j} dP_ij q_if E_ijf, dv_j = Σ_{i≥j} A_ij dO_i and
// dg_tf = Σ_{i≥t} Σ_{j<t} dP_ij q_if k_jf E_ijf (the pairs whose decay contains g_t; summed over
// f for a scalar gate), dP_ij = dO_i·v_j.
NaiveGrads naive_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& gate,
                          const Tensor& grad) {
  const int64_t n = q.size(-2), f = q.size(-1), d = v.size(-1), gw = gate.size(-1);
  const int64_t groups = q.numel() / (n * f);
  const std::vector<double> qv = q.to_double_vector(), kv = k.to_double_vector(),
                            vv = v.to_double_vector(), gv = gate.to_double_vector(),
                            dov = grad.to_double_vector();
  std::vector<double> dq(qv.size(), 0.0), dk(kv.size(), 0.0), dv(vv.size(), 0.0),
      dg(gv.size(), 0.0);
  for (int64_t g = 0; g < groups; ++g) {
    // e^(b_i − b_j) with b_i − b_j = Σ_{j<t≤i} g_t summed over the interval itself (a global
    // cumulative sum would lose small gates after a huge one).
    auto e = [&](int64_t i, int64_t j, int64_t x) {
      double sum = 0;
      for (int64_t t = j + 1; t <= i; ++t) sum += gv[(g * n + t) * gw + (gw == 1 ? 0 : x)];
      return std::exp(sum);
    };
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j <= i; ++j) {
        const int64_t ri = g * n + i, rj = g * n + j;
        double dp = 0, a = 0;
        for (int64_t y = 0; y < d; ++y) dp += dov[ri * d + y] * vv[rj * d + y];
        for (int64_t x = 0; x < f; ++x) {
          const double w = e(i, j, x);
          a += qv[ri * f + x] * kv[rj * f + x] * w;
          dq[ri * f + x] += dp * kv[rj * f + x] * w;
          dk[rj * f + x] += dp * qv[ri * f + x] * w;
          // The pair (i, j) decays by g_t for j < t ≤ i.
          for (int64_t t = j + 1; t <= i; ++t)
            dg[(g * n + t) * gw + (gw == 1 ? 0 : x)] += dp * qv[ri * f + x] * kv[rj * f + x] * w;
        }
        for (int64_t y = 0; y < d; ++y) dv[rj * d + y] += a * dov[ri * d + y];
      }
    }
  }
  return {tensor_from(dq, q.shape(), DType::kF64), tensor_from(dk, k.shape(), DType::kF64),
          tensor_from(dv, v.shape(), DType::kF64), tensor_from(dg, gate.shape(), DType::kF64)};
}

// Gates in [low, 0] of [b, h, n, width], with a few exact zeros.
Tensor random_gates(Generator& gen, int64_t b, int64_t h, int64_t n, int64_t width, double low) {
  Tensor gate = rand({b, h, n, width}, gen, low, 0.0, DType::kF64);
  std::vector<double> values = gate.to_double_vector();
  for (size_t i = 0; i < values.size(); i += 5) values[i] = 0.0;
  return tensor_from(values, gate.shape(), DType::kF64);
}

// One generation step at a time with a carried state [G, F, D]; returns [..., N, D].
Tensor stepped(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& gate) {
  const int64_t n = q.size(-2), f = q.size(-1), d = v.size(-1), gw = gate.size(-1);
  const int64_t groups = q.numel() / (n * f);
  Tensor state = zeros({groups, f, d}, q.dtype());
  const Tensor q3 = q.reshape({groups, n, f}), k3 = k.reshape({groups, n, f}),
               v3 = v.reshape({groups, n, d}), g3 = gate.reshape({groups, n, gw});
  Tensor out = Tensor::empty({groups, n, d}, q.dtype());
  for (int64_t t = 0; t < n; ++t) {
    const Tensor o = backend::gated_linear_attention_step(
        q3.slice(1, t, t + 1).squeeze(1), k3.slice(1, t, t + 1).squeeze(1),
        v3.slice(1, t, t + 1).squeeze(1), g3.slice(1, t, t + 1).squeeze(1), state);
    out.slice(1, t, t + 1).squeeze(1).copy_from(o);
  }
  return out.reshape(v.shape());
}

constexpr double kTol = 1e-12;  // f64: sums of a few hundred O(1) products

struct Case {
  int64_t b, h, n, f, d, chunk;
  bool scalar_gate;
};

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  const Case& c = info.param;
  std::string name = "B";
  for (const auto& [value, next] : {std::pair{c.b, "H"}, std::pair{c.h, "N"}, std::pair{c.n, "F"},
                                    std::pair{c.f, "D"}, std::pair{c.d, "C"}}) {
    name += std::to_string(value);
    name += next;
  }
  name += std::to_string(c.chunk);
  name += c.scalar_gate ? "_scalar" : "_channel";
  return name;
}

class GatedLinearAttentionForms : public ::testing::TestWithParam<Case> {};

TEST_P(GatedLinearAttentionForms, ChunkedQuadraticStepAndNaiveAgree) {
  const Case c = GetParam();
  Generator gen(c.n * 131 + c.chunk + (c.scalar_gate ? 7 : 0));
  const auto [q, k, v] = random_qkv(gen, c.b, c.h, c.n, c.f, c.d);
  const Tensor gate = random_gates(gen, c.b, c.h, c.n, c.scalar_gate ? 1 : c.f, -1.5);
  const Tensor want = naive_recurrence(q, k, v, gate);
  EXPECT_TRUE(
      allclose(backend::gated_linear_attention_forward(q, k, v, gate, c.chunk), want, kTol, kTol));
  EXPECT_TRUE(allclose(backend::gated_linear_attention_quadratic(q, k, v, gate), want, kTol, kTol));
  EXPECT_TRUE(allclose(stepped(q, k, v, gate), want, kTol, kTol));
}

TEST_P(GatedLinearAttentionForms, BackwardMatchesPairSums) {
  const Case c = GetParam();
  Generator gen(c.n * 17 + c.chunk + (c.scalar_gate ? 3 : 0));
  const auto [q, k, v] = random_qkv(gen, c.b, c.h, c.n, c.f, c.d);
  const Tensor gate = random_gates(gen, c.b, c.h, c.n, c.scalar_gate ? 1 : c.f, -1.5);
  const Tensor grad = randn({c.b, c.h, c.n, c.d}, gen, 0, 1, DType::kF64);
  const NaiveGrads want = naive_backward(q, k, v, gate, grad);
  const auto got = backend::gated_linear_attention_backward(q, k, v, gate, grad, c.chunk);
  EXPECT_TRUE(allclose(got.dq, want.dq, kTol, kTol)) << "dq";
  EXPECT_TRUE(allclose(got.dk, want.dk, kTol, kTol)) << "dk";
  EXPECT_TRUE(allclose(got.dv, want.dv, kTol, kTol)) << "dv";
  EXPECT_EQ(got.dlog_gate.shape(), gate.shape());
  EXPECT_TRUE(allclose(got.dlog_gate, want.dgate, kTol, kTol)) << "dlog_gate";
}

std::vector<Case> cases() {
  std::vector<Case> out;
  for (bool scalar : {false, true}) {
    out.push_back({1, 1, 7, 4, 3, 3, scalar});    // N % C != 0
    out.push_back({2, 3, 5, 4, 4, 16, scalar});   // N < C
    out.push_back({1, 2, 9, 3, 5, 1, scalar});    // C = 1: the pure recurrence
    out.push_back({2, 2, 16, 8, 8, 4, scalar});   // several full chunks
    out.push_back({1, 1, 13, 5, 7, 13, scalar});  // C = N
    out.push_back({3, 1, 1, 2, 2, 64, scalar});   // N = 1
    out.push_back({1, 2, 40, 6, 3, 32, scalar});  // sub-blocks of 16 inside a chunk, F > D
    out.push_back({1, 1, 45, 3, 2, 20, scalar});  // chunk 20: sub-blocks of 16 and 4
    out.push_back({1, 1, 70, 5, 9, 64, scalar});  // chunk 64, a partial second chunk
    out.push_back({1, 1, 30, 1, 4, 8, scalar});   // F = 1 (both gate kinds coincide)
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Shapes, GatedLinearAttentionForms, ::testing::ValuesIn(cases()),
                         case_name);

TEST(GatedLinearAttention, ChunkSizeDoesNotChangeTheResult) {
  Generator gen(3);
  const auto [q, k, v] = random_qkv(gen, 1, 2, 50, 6, 5);
  for (int64_t width : {int64_t{6}, int64_t{1}}) {
    const Tensor gate = random_gates(gen, 1, 2, 50, width, -3.0);
    const Tensor grad = randn({1, 2, 50, 5}, gen, 0, 1, DType::kF64);
    const Tensor ref = backend::gated_linear_attention_forward(q, k, v, gate, 50);
    const auto ref_grads = backend::gated_linear_attention_backward(q, k, v, gate, grad, 50);
    for (int64_t chunk : {1, 2, 15, 16, 17, 33, 64, 100}) {
      EXPECT_TRUE(
          allclose(backend::gated_linear_attention_forward(q, k, v, gate, chunk), ref, kTol, kTol))
          << "chunk " << chunk << " width " << width;
      const auto got = backend::gated_linear_attention_backward(q, k, v, gate, grad, chunk);
      EXPECT_TRUE(allclose(got.dq, ref_grads.dq, kTol, kTol)) << chunk;
      EXPECT_TRUE(allclose(got.dk, ref_grads.dk, kTol, kTol)) << chunk;
      EXPECT_TRUE(allclose(got.dv, ref_grads.dv, kTol, kTol)) << chunk;
      EXPECT_TRUE(allclose(got.dlog_gate, ref_grads.dlog_gate, kTol, kTol)) << chunk;
    }
  }
}

TEST(GatedLinearAttention, ZeroGatesAreThePlainCausalKernel) {
  Generator gen(4);
  const auto [q, k, v] = random_qkv(gen, 2, 2, 77, 8, 6);
  const Tensor grad = randn({2, 2, 77, 6}, gen, 0, 1, DType::kF64);
  const Tensor plain = backend::causal_linear_attention_forward(q, k, v, 16);
  const auto plain_grads = backend::causal_linear_attention_backward(q, k, v, grad, 16);
  for (int64_t width : {int64_t{8}, int64_t{1}}) {
    const Tensor gate = zeros({2, 2, 77, width}, DType::kF64);
    for (int64_t chunk : {16, 64}) {
      EXPECT_TRUE(allclose(backend::gated_linear_attention_forward(q, k, v, gate, chunk), plain,
                           kTol, kTol));
      const auto got = backend::gated_linear_attention_backward(q, k, v, gate, grad, chunk);
      EXPECT_TRUE(allclose(got.dq, plain_grads.dq, kTol, kTol));
      EXPECT_TRUE(allclose(got.dk, plain_grads.dk, kTol, kTol));
      EXPECT_TRUE(allclose(got.dv, plain_grads.dv, kTol, kTol));
    }
  }
}

TEST(GatedLinearAttention, HugeGatesResetTheStateExactly) {
  // A gate of -1e30 (decay 0) inside a chunk forgets everything before it: the output after it
  // is attention over the suffix alone, and the small gates around it keep their precision.
  Generator gen(6);
  const int64_t n = 40, cut = 21;
  const auto [q, k, v] = random_qkv(gen, 1, 1, n, 4, 3);
  const Tensor grad = randn({1, 1, n, 3}, gen, 0, 1, DType::kF64);
  for (int64_t width : {int64_t{4}, int64_t{1}}) {
    Tensor gate = random_gates(gen, 1, 1, n, width, -1e-3);
    for (int64_t x = 0; x < width; ++x) gate.set({0, 0, cut, x}, -1e30);
    Tensor suffix_gate = gate.slice(2, cut, n).clone();
    for (int64_t x = 0; x < width; ++x) suffix_gate.set({0, 0, 0, x}, 0.0);
    const Tensor suffix =
        naive_recurrence(q.slice(2, cut, n), k.slice(2, cut, n), v.slice(2, cut, n), suffix_gate);
    for (int64_t chunk : {8, 32, 64}) {
      const Tensor o = backend::gated_linear_attention_forward(q, k, v, gate, chunk);
      EXPECT_TRUE(allclose(o, naive_recurrence(q, k, v, gate), kTol, kTol)) << chunk;
      EXPECT_TRUE(allclose(o.slice(2, cut, n), suffix, kTol, kTol)) << chunk;
      // Nothing crosses the reset: the prefix's gradients do not see the suffix's.
      const auto grads = backend::gated_linear_attention_backward(q, k, v, gate, grad, chunk);
      const NaiveGrads want = naive_backward(q, k, v, gate, grad);
      EXPECT_TRUE(allclose(grads.dq, want.dq, kTol, kTol)) << chunk;
      EXPECT_TRUE(allclose(grads.dk, want.dk, kTol, kTol)) << chunk;
      EXPECT_TRUE(allclose(grads.dv, want.dv, kTol, kTol)) << chunk;
      EXPECT_TRUE(allclose(grads.dlog_gate, want.dgate, kTol, kTol)) << chunk;
    }
  }
}

// [B, H, N, W] values stored as [B, N, H, W] (heads split from a projection).
Tensor heads_view(const Tensor& dense) {
  return dense.permute({0, 2, 1, 3}).contiguous().permute({0, 2, 1, 3});
}

TEST(GatedLinearAttention, HeadViewsGiveTheDenseResult) {
  Generator gen(5);
  const auto [q, k, v] = random_qkv(gen, 2, 3, 37, 5, 4);
  const Tensor grad = randn({2, 3, 37, 4}, gen, 0, 1, DType::kF64);
  for (int64_t width : {int64_t{5}, int64_t{1}}) {
    const Tensor gate = random_gates(gen, 2, 3, 37, width, -2.0);
    const Tensor dense = backend::gated_linear_attention_forward(q, k, v, gate, 16);
    const auto dense_grads = backend::gated_linear_attention_backward(q, k, v, gate, grad, 16);
    const Tensor gv = heads_view(gate);
    ASSERT_FALSE(heads_view(v).is_contiguous());
    EXPECT_TRUE(allclose(backend::gated_linear_attention_forward(heads_view(q), heads_view(k),
                                                                 heads_view(v), gv, 16),
                         dense, 0, 0));
    const auto grads = backend::gated_linear_attention_backward(
        heads_view(q), heads_view(k), heads_view(v), gv, heads_view(grad), 16);
    EXPECT_TRUE(allclose(grads.dq, dense_grads.dq, 0, 0));
    EXPECT_TRUE(allclose(grads.dk, dense_grads.dk, 0, 0));
    EXPECT_TRUE(allclose(grads.dv, dense_grads.dv, 0, 0));
    EXPECT_TRUE(allclose(grads.dlog_gate, dense_grads.dlog_gate, 0, 0));
  }
}

TEST(GatedLinearAttention, NoPositionsGiveEmptyResults) {
  const Tensor q = zeros({2, 3, 0, 8}), v = zeros({2, 3, 0, 4}), gate = zeros({2, 3, 0, 1});
  EXPECT_EQ(backend::gated_linear_attention_forward(q, q, v, gate).shape(), v.shape());
  const auto grads = backend::gated_linear_attention_backward(q, q, v, gate, v);
  EXPECT_EQ(grads.dq.shape(), q.shape());
  EXPECT_EQ(grads.dv.shape(), v.shape());
  EXPECT_EQ(grads.dlog_gate.shape(), gate.shape());
}

TEST(GatedLinearAttention, NoFeaturesGiveZeros) {
  Generator gen(7);
  const Tensor q = zeros({2, 3, 4, 0}, DType::kF64);
  const Tensor v = randn({2, 3, 4, 5}, gen, 0, 1, DType::kF64);
  const Tensor gate = rand({2, 3, 4, 1}, gen, -1, 0, DType::kF64);
  EXPECT_TRUE(allclose(backend::gated_linear_attention_forward(q, q, v, gate),
                       zeros(v.shape(), DType::kF64), 0, 0));
  const auto grads = backend::gated_linear_attention_backward(q, q, v, gate, v);
  EXPECT_TRUE(allclose(grads.dv, zeros(v.shape(), DType::kF64), 0, 0));
  EXPECT_TRUE(allclose(grads.dlog_gate, zeros(gate.shape(), DType::kF64), 0, 0));
}

TEST(GatedLinearAttention, BadInputsAreRefusedNamingTheShapes) {
  const Tensor q = zeros({2, 3, 5, 4}), v = zeros({2, 3, 5, 6});
  const Tensor channel = zeros({2, 3, 5, 4}), scalar = zeros({2, 3, 5, 1});
  const std::string op = "gated_linear_attention";
  // Gate width neither F nor 1.
  expect_error(
      [&] {
        backend::gated_linear_attention_forward(q, q, v, zeros({2, 3, 5, 3}));
      },
      {op, "[2,3,5,3]", "[2,3,5,4]", "[..., N, F] or [..., N, 1]"});
  // Gate length differs from N.
  expect_error(
      [&] {
        backend::gated_linear_attention_forward(q, q, v, zeros({2, 3, 6, 1}));
      },
      {op, "[2,3,6,1]"});
  // k and v that do not fit q.
  expect_error(
      [&] {
        backend::gated_linear_attention_forward(q, zeros({2, 3, 5, 5}), v, channel);
      },
      {op, "[2,3,5,5]"});
  expect_error(
      [&] {
        backend::gated_linear_attention_forward(q, q, zeros({2, 3, 4, 6}), scalar);
      },
      {op, "[2,3,4,6]"});
  // Positive, infinite or NaN gates.
  Tensor positive = zeros({2, 3, 5, 1});
  positive.set({1, 2, 3, 0}, 0.25);
  expect_error([&] { backend::gated_linear_attention_forward(q, q, v, positive); },
               {op, "must be finite and <= 0", "0.25", "group 5", "position 3"});
  Tensor nan = zeros({2, 3, 5, 4});
  nan.set({0, 0, 1, 2}, std::nan(""));
  expect_error([&] { backend::gated_linear_attention_forward(q, q, v, nan); },
               {op, "must be finite and <= 0"});
  Tensor minus_inf = zeros({2, 3, 5, 4});
  minus_inf.set({0, 0, 1, 2}, -INFINITY);
  expect_error([&] { backend::gated_linear_attention_backward(q, q, v, minus_inf, v); },
               {"gated_linear_attention_backward", "must be finite and <= 0"});
  Tensor plus_inf = zeros({2, 3, 5, 1});
  plus_inf.set({0, 1, 4, 0}, INFINITY);
  expect_error([&] { backend::gated_linear_attention_forward(q, q, v, plus_inf); },
               {op, "must be finite and <= 0", "inf"});
  // −0 is a gate of 0 (no decay), not a positive one.
  EXPECT_NO_THROW(backend::gated_linear_attention_forward(q, q, v, full({2, 3, 5, 4}, -0.0)));
  // Mixed and unsupported dtypes.
  expect_error(
      [&] {
        backend::gated_linear_attention_forward(q, q, v, zeros({2, 3, 5, 1}, DType::kF64));
      },
      {op, "dtypes", "f64"});
  expect_error(
      [&] {
        backend::gated_linear_attention_forward(q.to(DType::kBF16), q.to(DType::kBF16),
                                                v.to(DType::kBF16), scalar.to(DType::kBF16));
      },
      {op, "bf16", "not supported"});
  // Chunk size and the gradient's shape.
  expect_error([&] { backend::gated_linear_attention_forward(q, q, v, scalar, 0); },
               {op, "chunk size"});
  expect_error(
      [&] {
        backend::gated_linear_attention_backward(q, q, v, scalar, zeros({2, 3, 5, 5}));
      },
      {"gated_linear_attention_backward", "[2,3,5,5]"});
  // The step: shapes and gate values.
  Tensor state = zeros({6, 4, 6});
  expect_error(
      [&] {
        backend::gated_linear_attention_step(zeros({6, 4}), zeros({6, 4}), zeros({6, 6}),
                                             zeros({6, 2}), state);
      },
      {"gated_linear_attention_step", "[6,2]"});
  expect_error(
      [&] {
        backend::gated_linear_attention_step(zeros({6, 4}), zeros({6, 4}), zeros({6, 6}),
                                             full({6, 1}, 0.5), state);
      },
      {"gated_linear_attention_step", "must be finite and <= 0"});
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
