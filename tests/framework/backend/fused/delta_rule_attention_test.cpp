// Delta-rule attention kernels: chunked == recurrent == step == a naive (I − β kᵀk) matrix loop.
#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "framework/backend/fused/delta_rule_attention.h"
#include "framework/backend/fused/linear_attention.h"
#include "framework/tensor/random.h"
#include "tests/support/allclose.h"
#include "tests/support/expect_error.h"
#include "tests/support/tensor_factory.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

using testing::allclose;
using testing::expect_error;
using testing::max_relative_error;

// Inputs of one test: q, k [B, H, N, F], v [B, H, N, D], beta [B, H, N], log_gate [B, H, N] or
// undefined.
struct DeltaInputs {
  Tensor q, k, v, beta, gate;
};

// Random inputs in f64: keys L2-normalised (or N(0, 1/F) when raw_keys), β uniform in
// (0.05, 0.95), log-gates uniform in [gate_low, 0] when gated.
DeltaInputs random_inputs(uint64_t seed, int64_t b, int64_t h, int64_t n, int64_t f, int64_t d,
                          bool gated, double gate_low = -1.0, bool raw_keys = false) {
  Generator gen(seed);
  DeltaInputs in;
  in.q = randn({b, h, n, f}, gen, 0, 1, DType::kF64);
  const Tensor k = randn({b, h, n, f}, gen, 0, 1, DType::kF64);
  in.k = raw_keys ? tensor_from(
                        [&] {
                          std::vector<double> a = k.to_double_vector();
                          for (double& x : a) x /= std::sqrt(static_cast<double>(f));
                          return a;
                        }(),
                        k.shape(), DType::kF64)
                  : testing::l2_normalise_rows(k);
  in.v = randn({b, h, n, d}, gen, 0, 1, DType::kF64);
  in.beta = rand({b, h, n}, gen, 0.05, 0.95, DType::kF64);
  if (gated) in.gate = rand({b, h, n}, gen, gate_low, 0.0, DType::kF64);
  return in;
}

// The recurrence written out with explicit matrices, in double, per slice:
// M = I − β kᵀk [F, F], S ← α M S + β kᵀ v [F, D], o = q S.
Tensor naive_delta(const DeltaInputs& in) {
  const int64_t n = in.q.size(-2), f = in.q.size(-1), d = in.v.size(-1);
  const int64_t groups = in.q.numel() / (n * f);
  const std::vector<double> q = in.q.to_double_vector(), k = in.k.to_double_vector(),
                            v = in.v.to_double_vector(), beta = in.beta.to_double_vector();
  const std::vector<double> gate =
      in.gate.defined() ? in.gate.to_double_vector() : std::vector<double>(groups * n, 0.0);
  std::vector<double> o(groups * n * d, 0.0);
  for (int64_t g = 0; g < groups; ++g) {
    std::vector<double> s(f * d, 0.0);
    for (int64_t t = 0; t < n; ++t) {
      const double* kt = &k[(g * n + t) * f];
      const double* vt = &v[(g * n + t) * d];
      const double* qt = &q[(g * n + t) * f];
      const double bt = beta[g * n + t];
      const double alpha = std::exp(gate[g * n + t]);
      std::vector<double> m(f * f);
      for (int64_t i = 0; i < f; ++i) {
        for (int64_t j = 0; j < f; ++j) m[i * f + j] = (i == j ? 1.0 : 0.0) - bt * kt[i] * kt[j];
      }
      std::vector<double> next(f * d, 0.0);
      for (int64_t i = 0; i < f; ++i) {
        for (int64_t e = 0; e < d; ++e) {
          double acc = 0;
          for (int64_t j = 0; j < f; ++j) acc += m[i * f + j] * s[j * d + e];
          next[i * d + e] = alpha * acc + bt * kt[i] * vt[e];
        }
      }
      s = next;
      for (int64_t e = 0; e < d; ++e) {
        double acc = 0;
        for (int64_t i = 0; i < f; ++i) acc += qt[i] * s[i * d + e];
        o[(g * n + t) * d + e] = acc;
      }
    }
  }
  return tensor_from(o, in.v.shape(), DType::kF64);
}

// Token by token through delta_rule_attention_step with a carried [G, F, D] state.
Tensor stepwise(const DeltaInputs& in) {
  const int64_t n = in.q.size(-2), f = in.q.size(-1), d = in.v.size(-1);
  const int64_t groups = in.q.numel() / (n * f);
  const Tensor q3 = in.q.reshape({groups, n, f}), k3 = in.k.reshape({groups, n, f});
  const Tensor v3 = in.v.reshape({groups, n, d});
  const Tensor b2 = in.beta.reshape({groups, n});
  const Tensor g2 = in.gate.defined() ? in.gate.reshape({groups, n}) : Tensor();
  Tensor state = zeros({groups, f, d}, in.q.dtype());
  Tensor out = Tensor::empty({groups, n, d}, in.q.dtype());
  for (int64_t t = 0; t < n; ++t) {
    const auto at = [t](const Tensor& x) { return x.slice(1, t, t + 1).squeeze(1); };
    const Tensor o = backend::delta_rule_attention_step(at(q3), at(k3), at(v3), at(b2),
                                                        g2.defined() ? at(g2) : Tensor(), state);
    out.slice(1, t, t + 1).squeeze(1).copy_from(o);
  }
  return out.reshape(in.v.shape());
}

DeltaInputs to_dtype(const DeltaInputs& in, DType dtype) {
  return {in.q.to(dtype), in.k.to(dtype), in.v.to(dtype), in.beta.to(dtype),
          in.gate.defined() ? in.gate.to(dtype) : Tensor()};
}

struct Case {
  int64_t b, h, n, f, d, chunk;
  bool gated;
  bool raw_keys;
};

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  const Case& c = info.param;
  std::ostringstream name;
  name << "B" << c.b << "H" << c.h << "N" << c.n << "F" << c.f << "D" << c.d << "C" << c.chunk
       << (c.gated ? "Gated" : "Plain") << (c.raw_keys ? "RawKeys" : "");
  return name.str();
}

class DeltaRuleForms : public ::testing::TestWithParam<Case> {};

TEST_P(DeltaRuleForms, ChunkedRecurrentStepAndNaiveAgree) {
  const Case c = GetParam();
  const DeltaInputs in =
      random_inputs(c.n * 131 + c.chunk * 7 + c.f, c.b, c.h, c.n, c.f, c.d, c.gated,
                    /*gate_low=*/-1.5, c.raw_keys);
  const Tensor expected = naive_delta(in);
  EXPECT_TRUE(
      allclose(backend::delta_rule_attention_forward(in.q, in.k, in.v, in.beta, in.gate, c.chunk),
               expected, 1e-11, 1e-11));
  EXPECT_TRUE(allclose(backend::delta_rule_attention_recurrent(in.q, in.k, in.v, in.beta, in.gate),
                       expected, 1e-11, 1e-11));
  EXPECT_TRUE(allclose(stepwise(in), expected, 1e-11, 1e-11));
}

TEST_P(DeltaRuleForms, BackwardIndependentOfChunkSize) {
  // chunk = 1 is the pure state recurrence (no triangular solve), chunk = N a single chunk.
  const Case c = GetParam();
  const DeltaInputs in =
      random_inputs(c.n * 17 + 3, c.b, c.h, c.n, c.f, c.d, c.gated, -1.5, c.raw_keys);
  Generator gen(c.n + 5);
  const Tensor g = randn(in.v.shape(), gen, 0, 1, DType::kF64);
  const auto ref = backend::delta_rule_attention_backward(in.q, in.k, in.v, in.beta, in.gate, g, 1);
  const auto got =
      backend::delta_rule_attention_backward(in.q, in.k, in.v, in.beta, in.gate, g, c.chunk);
  EXPECT_TRUE(allclose(got.dq, ref.dq, 1e-10, 1e-10));
  EXPECT_TRUE(allclose(got.dk, ref.dk, 1e-10, 1e-10));
  EXPECT_TRUE(allclose(got.dv, ref.dv, 1e-10, 1e-10));
  EXPECT_TRUE(allclose(got.dbeta, ref.dbeta, 1e-10, 1e-10));
  EXPECT_EQ(got.dlog_gate.defined(), c.gated);
  if (c.gated) {
    EXPECT_TRUE(allclose(got.dlog_gate, ref.dlog_gate, 1e-10, 1e-10));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, DeltaRuleForms,
    ::testing::Values(Case{1, 1, 7, 4, 3, 3, false, false},     // N % C != 0, F != D
                      Case{1, 1, 7, 4, 3, 3, true, false},      //
                      Case{2, 3, 5, 4, 4, 16, false, false},    // N < C (C > N)
                      Case{2, 3, 5, 4, 4, 16, true, false},     //
                      Case{1, 2, 9, 3, 5, 1, false, false},     // C = 1 (pure recurrence)
                      Case{1, 2, 9, 3, 5, 1, true, false},      //
                      Case{2, 2, 16, 8, 8, 4, false, false},    // several full chunks
                      Case{2, 2, 16, 8, 8, 4, true, false},     //
                      Case{1, 1, 13, 5, 7, 13, true, false},    // one chunk = whole sequence
                      Case{1, 1, 40, 6, 3, 64, true, false},    // C > N, F != D
                      Case{2, 1, 37, 6, 4, 8, false, true},     // keys not normalised
                      Case{2, 1, 37, 6, 4, 8, true, true},      //
                      Case{3, 1, 1, 2, 2, 64, true, false},     // N = 1
                      Case{1, 2, 100, 16, 8, 32, true, false},  // longer, gated
                      // chunks of 40 = solve blocks of 16, 16, 8; the last chunk 20 = 16 + 4
                      Case{1, 2, 100, 8, 6, 40, true, false},    //
                      Case{1, 2, 100, 8, 6, 40, false, false}),  //
    case_name);

TEST(DeltaRuleAttention, StronglyGatedFormsAgree) {
  // Gates down to −20 per step: most factors underflow to 0 inside a chunk.
  const DeltaInputs in = random_inputs(21, 1, 2, 50, 5, 4, true, -20.0);
  const Tensor expected = naive_delta(in);
  for (int64_t chunk : {1, 7, 16, 64}) {
    EXPECT_TRUE(
        allclose(backend::delta_rule_attention_forward(in.q, in.k, in.v, in.beta, in.gate, chunk),
                 expected, 1e-11, 1e-11))
        << "chunk " << chunk;
  }
  EXPECT_TRUE(allclose(stepwise(in), expected, 1e-11, 1e-11));
}

TEST(DeltaRuleAttention, NonContiguousInputs) {
  // [B, N, H, F] projections viewed as [B, H, N, F], as an attention layer does.
  const DeltaInputs in = random_inputs(22, 2, 3, 11, 4, 5, true);
  const auto view = [](const Tensor& x) {
    return x.permute({0, 2, 1, 3}).contiguous().permute({0, 2, 1, 3});
  };
  const auto view3 = [](const Tensor& x) {
    return x.permute({0, 2, 1}).contiguous().permute({0, 2, 1});
  };
  const Tensor q = view(in.q), k = view(in.k), v = view(in.v), b = view3(in.beta),
               g = view3(in.gate);
  ASSERT_FALSE(q.is_contiguous());
  EXPECT_TRUE(allclose(backend::delta_rule_attention_forward(q, k, v, b, g, 4),
                       backend::delta_rule_attention_forward(in.q, in.k, in.v, in.beta, in.gate, 4),
                       1e-14, 1e-14));
  Generator gen(3);
  const Tensor dout = randn(in.v.shape(), gen, 0, 1, DType::kF64);
  const auto got = backend::delta_rule_attention_backward(q, k, v, b, g, view(dout), 4);
  const auto ref =
      backend::delta_rule_attention_backward(in.q, in.k, in.v, in.beta, in.gate, dout, 4);
  EXPECT_TRUE(allclose(got.dq, ref.dq, 1e-14, 1e-14));
  EXPECT_TRUE(allclose(got.dk, ref.dk, 1e-14, 1e-14));
  EXPECT_TRUE(allclose(got.dv, ref.dv, 1e-14, 1e-14));
  EXPECT_TRUE(allclose(got.dbeta, ref.dbeta, 1e-14, 1e-14));
  EXPECT_TRUE(allclose(got.dlog_gate, ref.dlog_gate, 1e-14, 1e-14));
}

TEST(DeltaRuleAttention, FloatMatchesDouble) {
  for (bool gated : {false, true}) {
    const DeltaInputs in = random_inputs(5, 2, 2, 77, 8, 8, gated, -2.0);
    const DeltaInputs in32 = to_dtype(in, DType::kF32);
    Generator gen(6);
    const Tensor dout = randn(in.v.shape(), gen, 0, 1, DType::kF64);
    const Tensor o64 =
        backend::delta_rule_attention_forward(in.q, in.k, in.v, in.beta, in.gate, 16);
    const Tensor o32 =
        backend::delta_rule_attention_forward(in32.q, in32.k, in32.v, in32.beta, in32.gate, 16);
    EXPECT_EQ(o32.dtype(), DType::kF32);
    EXPECT_LT(max_relative_error(o32, o64), 1e-5) << "gated " << gated;
    const auto g64 =
        backend::delta_rule_attention_backward(in.q, in.k, in.v, in.beta, in.gate, dout, 16);
    const auto g32 = backend::delta_rule_attention_backward(in32.q, in32.k, in32.v, in32.beta,
                                                            in32.gate, dout.to(DType::kF32), 16);
    EXPECT_LT(max_relative_error(g32.dq, g64.dq), 1e-5) << "gated " << gated;
    EXPECT_LT(max_relative_error(g32.dk, g64.dk), 1e-5) << "gated " << gated;
    EXPECT_LT(max_relative_error(g32.dv, g64.dv), 1e-5) << "gated " << gated;
    EXPECT_LT(max_relative_error(g32.dbeta, g64.dbeta), 1e-5) << "gated " << gated;
    if (gated) {
      EXPECT_LT(max_relative_error(g32.dlog_gate, g64.dlog_gate), 1e-5);
    }
    // The f32 recurrent reference and the step agree with the chunked f32 kernel too.
    EXPECT_LT(max_relative_error(backend::delta_rule_attention_recurrent(in32.q, in32.k, in32.v,
                                                                         in32.beta, in32.gate),
                                 o64),
              1e-5);
  }
}

bool all_finite(const Tensor& t) {
  for (double x : t.to_double_vector()) {
    if (!std::isfinite(x)) return false;
  }
  return true;
}

TEST(DeltaRuleAttention, LongSequenceFloatStability) {
  // N = 32768 in f32 with normalised keys, β in (0, 1): slice 0 with gates 0 (log_gate = 0),
  // slice 1 with strong gates uniform in [−20, 0], slice 2 mostly ungated with spikes of −20.
  const int64_t n = 32768, f = 16, d = 16;
  DeltaInputs in = random_inputs(32768, 1, 3, n, f, d, true, -20.0);
  std::vector<double> gate = in.gate.to_double_vector();
  for (int64_t t = 0; t < n; ++t) {
    gate[t] = 0.0;
    gate[2 * n + t] = (t % 997 == 0) ? -20.0 : 0.0;
  }
  in.gate = tensor_from(gate, {1, 3, n}, DType::kF64);
  const DeltaInputs in32 = to_dtype(in, DType::kF32);
  const Tensor o64 = backend::delta_rule_attention_forward(in.q, in.k, in.v, in.beta, in.gate, 64);
  EXPECT_TRUE(allclose(o64,
                       backend::delta_rule_attention_recurrent(in.q, in.k, in.v, in.beta, in.gate),
                       1e-10, 1e-10));
  const Tensor o32 =
      backend::delta_rule_attention_forward(in32.q, in32.k, in32.v, in32.beta, in32.gate, 64);
  EXPECT_TRUE(all_finite(o32));
  for (int64_t h = 0; h < 3; ++h) {
    EXPECT_LT(max_relative_error(o32.slice(1, h, h + 1), o64.slice(1, h, h + 1)), 1e-5)
        << "slice " << h;
  }
  // Plain DeltaNet (no gate) as well, and the backward.
  const Tensor p64 = backend::delta_rule_attention_forward(in.q, in.k, in.v, in.beta, Tensor(), 64);
  const Tensor p32 =
      backend::delta_rule_attention_forward(in32.q, in32.k, in32.v, in32.beta, Tensor(), 64);
  EXPECT_TRUE(all_finite(p32));
  EXPECT_LT(max_relative_error(p32, p64), 1e-5);
  Generator gen(8);
  const Tensor dout = randn(in.v.shape(), gen, 0, 1, DType::kF64);
  const auto g64 =
      backend::delta_rule_attention_backward(in.q, in.k, in.v, in.beta, in.gate, dout, 64);
  const auto g32 = backend::delta_rule_attention_backward(in32.q, in32.k, in32.v, in32.beta,
                                                          in32.gate, dout.to(DType::kF32), 64);
  for (const auto& [got, want] :
       {std::pair{g32.dq, g64.dq}, std::pair{g32.dk, g64.dk}, std::pair{g32.dv, g64.dv},
        std::pair{g32.dbeta, g64.dbeta}, std::pair{g32.dlog_gate, g64.dlog_gate}}) {
    EXPECT_TRUE(all_finite(got));
    EXPECT_LT(max_relative_error(got, want), 1e-5);
  }
}

TEST(DeltaRuleAttention, TinyBetaTendsToZeroLikePlainLinearAttention) {
  // With α = 1 and β → 0, S_t = β Σ_{j≤t} k_jᵀ v_j + O(β²): o / β → causal linear attention.
  const DeltaInputs in = random_inputs(12, 2, 2, 19, 4, 3, false);
  const double beta = 1e-9;
  const Tensor b =
      tensor_from(std::vector<double>(in.beta.numel(), beta), in.beta.shape(), DType::kF64);
  const Tensor o = backend::delta_rule_attention_forward(in.q, in.k, in.v, b, Tensor(), 8);
  const Tensor lin = backend::causal_linear_attention_forward(in.q, in.k, in.v, 8);
  double max_abs = 0;
  std::vector<double> scaled = o.to_double_vector();
  for (double& x : scaled) {
    max_abs = std::max(max_abs, std::abs(x));
    x /= beta;
  }
  EXPECT_LT(max_abs, 1e-6);
  EXPECT_LT(max_relative_error(tensor_from(scaled, o.shape(), DType::kF64), lin), 1e-7);
}

TEST(DeltaRuleAttention, ZeroLogGateEqualsPlainExactly) {
  for (DType dtype : {DType::kF64, DType::kF32}) {
    DeltaInputs in = to_dtype(random_inputs(13, 2, 2, 29, 6, 5, false), dtype);
    const Tensor zero_gate = zeros(in.beta.shape(), dtype);
    Generator gen(14);
    const Tensor dout = randn(in.v.shape(), gen, 0, 1, dtype);
    for (int64_t chunk : {1, 8, 64}) {
      const Tensor plain =
          backend::delta_rule_attention_forward(in.q, in.k, in.v, in.beta, Tensor(), chunk);
      const Tensor gated =
          backend::delta_rule_attention_forward(in.q, in.k, in.v, in.beta, zero_gate, chunk);
      EXPECT_EQ(plain.to_double_vector(), gated.to_double_vector()) << "chunk " << chunk;
      const auto gp =
          backend::delta_rule_attention_backward(in.q, in.k, in.v, in.beta, Tensor(), dout, chunk);
      const auto gg =
          backend::delta_rule_attention_backward(in.q, in.k, in.v, in.beta, zero_gate, dout, chunk);
      EXPECT_EQ(gp.dq.to_double_vector(), gg.dq.to_double_vector());
      EXPECT_EQ(gp.dk.to_double_vector(), gg.dk.to_double_vector());
      EXPECT_EQ(gp.dv.to_double_vector(), gg.dv.to_double_vector());
      EXPECT_EQ(gp.dbeta.to_double_vector(), gg.dbeta.to_double_vector());
      EXPECT_FALSE(gp.dlog_gate.defined());
      EXPECT_TRUE(gg.dlog_gate.defined());
    }
  }
}

TEST(DeltaRuleAttention, EmptySequence) {
  const DeltaInputs in = random_inputs(15, 2, 1, 0, 3, 4, true);
  const Tensor o = backend::delta_rule_attention_forward(in.q, in.k, in.v, in.beta, in.gate, 8);
  EXPECT_EQ(o.shape(), (Shape{2, 1, 0, 4}));
  const auto grads = backend::delta_rule_attention_backward(in.q, in.k, in.v, in.beta, in.gate,
                                                            zeros({2, 1, 0, 4}, DType::kF64), 8);
  EXPECT_EQ(grads.dq.shape(), in.q.shape());
  EXPECT_EQ(grads.dlog_gate.shape(), in.gate.shape());
}

TEST(DeltaRuleAttention, BadInputsNameTheShapes) {
  const Tensor q = zeros({2, 3, 4}, DType::kF64), v = zeros({2, 3, 5}, DType::kF64);
  const Tensor beta = zeros({2, 3}, DType::kF64);
  expect_error(
      [&] {
        backend::delta_rule_attention_forward(q, zeros({2, 3, 5}), v, beta);
      },
      {"delta_rule_attention", "[2,3,4]", "[2,3,5]"});
  expect_error(
      [&] {
        backend::delta_rule_attention_forward(q, q, zeros({2, 4, 5}), beta);
      },
      {"delta_rule_attention", "[2,4,5]"});
  expect_error(
      [&] {
        backend::delta_rule_attention_forward(q, q, v, zeros({2, 4}));
      },
      {"delta_rule_attention", "beta", "[2,4]", "[2,3]"});
  expect_error(
      [&] {
        backend::delta_rule_attention_forward(q, q, v, zeros({2, 3, 1}));
      },
      {"beta", "[2,3,1]"});
  expect_error(
      [&] { backend::delta_rule_attention_forward(q, q, v, beta, zeros({3}, DType::kF64)); },
      {"log_gate", "[3]", "[2,3]"});
  expect_error([&] { backend::delta_rule_attention_forward(q, q, v, beta, Tensor(), 0); },
               {"chunk size"});
  expect_error(
      [&] {
        backend::delta_rule_attention_forward(q, q, v, zeros({2, 3}, DType::kF32));
      },
      {"dtypes"});
  expect_error(
      [&] {
        backend::delta_rule_attention_backward(q, q, v, beta, Tensor(), zeros({2, 3, 4}), 4);
      },
      {"delta_rule_attention_backward", "[2,3,4]", "[2,3,5]"});
  expect_error(
      [&] {
        backend::delta_rule_attention_forward(q.to(DType::kBF16), q.to(DType::kBF16),
                                              v.to(DType::kBF16), beta.to(DType::kBF16));
      },
      {"delta_rule_attention", "not supported"});
  Tensor state = zeros({2, 4, 4}, DType::kF64);
  expect_error(
      [&] {
        backend::delta_rule_attention_step(zeros({2, 4}, DType::kF64), zeros({2, 4}, DType::kF64),
                                           zeros({2, 5}, DType::kF64), zeros({2}, DType::kF64),
                                           Tensor(), state);
      },
      {"delta_rule_attention_step", "[2,4,4]", "[2,5]"});
  Tensor good_state = zeros({2, 4, 5}, DType::kF64);
  expect_error(
      [&] {
        backend::delta_rule_attention_step(zeros({2, 4}, DType::kF64), zeros({2, 4}, DType::kF64),
                                           zeros({2, 5}, DType::kF64), zeros({3}, DType::kF64),
                                           Tensor(), good_state);
      },
      {"delta_rule_attention_step", "beta [3]"});
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
