// Delta-rule attention with state carry: the chunked kernel with an initial state against the
// token recurrence, and segments chained through their states against the whole sequence
// (outputs, final state and every gradient, β and the gates included), DeltaNet and Gated
// DeltaNet, f32 against f64.
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "framework/backend/fused/delta_rule_attention.h"
#include "framework/tensor/random.h"
#include "tests/support/allclose.h"
#include "tests/support/expect_error.h"
#include "tests/support/tensor_factory.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

using testing::allclose;

struct Inputs {
  Tensor q, k, v, beta, gate, initial, grad_out, grad_final;  // gate undefined: DeltaNet
};

// q, k [2, 2, n, 3] (keys of unit length), v [2, 2, n, 4], β in (0.05, 0.95), gates in
// [−1.5, 0] when gated, a random S₀ and random output / final-state gradients.
Inputs random_inputs(Generator& gen, int64_t n, bool gated) {
  Inputs in;
  in.q = randn({2, 2, n, 3}, gen, 0, 1, DType::kF64);
  in.k = testing::l2_normalise_rows(randn({2, 2, n, 3}, gen, 0, 1, DType::kF64));
  in.v = randn({2, 2, n, 4}, gen, 0, 1, DType::kF64);
  in.beta = rand({2, 2, n}, gen, 0.05, 0.95, DType::kF64);
  if (gated) in.gate = rand({2, 2, n}, gen, -1.5, 0.0, DType::kF64);
  in.initial = randn({2, 2, 3, 4}, gen, 0, 1, DType::kF64);
  in.grad_out = randn({2, 2, n, 4}, gen, 0, 1, DType::kF64);
  in.grad_final = randn({2, 2, 3, 4}, gen, 0, 1, DType::kF64);
  return in;
}

struct Recurrence {
  Tensor output, final_state;
};

// The definition, token by token in double: S ← α (S − β kᵀ (k S)) + β kᵀ v, o = q S, from S₀.
Recurrence recurrence(const Inputs& in, const Tensor& initial) {
  const int64_t groups = 4, n = in.q.size(2), f = 3, d = 4;
  const std::vector<double> q = in.q.to_double_vector(), k = in.k.to_double_vector(),
                            v = in.v.to_double_vector(), beta = in.beta.to_double_vector();
  const std::vector<double> gate =
      in.gate.defined() ? in.gate.to_double_vector() : std::vector<double>(groups * n, 0.0);
  std::vector<double> state =
      initial.defined() ? initial.to_double_vector() : std::vector<double>(groups * f * d, 0.0);
  std::vector<double> out(groups * n * d);
  for (int64_t g = 0; g < groups; ++g) {
    double* s = state.data() + g * f * d;
    for (int64_t t = 0; t < n; ++t) {
      const double* kt = k.data() + (g * n + t) * f;
      const double* vt = v.data() + (g * n + t) * d;
      const double b = beta[g * n + t], alpha = std::exp(gate[g * n + t]);
      for (int64_t e = 0; e < d; ++e) {
        double ks = 0;  // (k S)_e
        for (int64_t a = 0; a < f; ++a) ks += kt[a] * s[a * d + e];
        for (int64_t a = 0; a < f; ++a) {
          s[a * d + e] = alpha * (s[a * d + e] - b * kt[a] * ks) + b * kt[a] * vt[e];
        }
      }
      for (int64_t e = 0; e < d; ++e) {
        double o = 0;
        for (int64_t a = 0; a < f; ++a) o += q[(g * n + t) * f + a] * s[a * d + e];
        out[(g * n + t) * d + e] = o;
      }
    }
  }
  return {tensor_from(out, in.v.shape(), DType::kF64),
          tensor_from(state, {2, 2, f, d}, DType::kF64)};
}

TEST(DeltaRuleAttentionState, InitialAndFinalStateMatchTheRecurrence) {
  for (bool gated : {false, true}) {
    for (int64_t n : {1, 5, 37}) {
      for (int64_t chunk : {1, 4, 64}) {
        Generator gen(n * 13 + chunk + (gated ? 1 : 0));
        const Inputs in = random_inputs(gen, n, gated);
        const std::string where = std::string(gated ? "gated" : "plain") +
                                  " n=" + std::to_string(n) + " chunk=" + std::to_string(chunk);
        for (bool with_initial : {true, false}) {
          const Tensor initial = with_initial ? in.initial : Tensor();
          const Recurrence want = recurrence(in, initial);
          Tensor final_state;
          const Tensor o = backend::delta_rule_attention_forward(in.q, in.k, in.v, in.beta, in.gate,
                                                                 chunk, initial, &final_state);
          EXPECT_TRUE(allclose(o, want.output, 1e-10, 1e-10)) << where << " " << with_initial;
          EXPECT_TRUE(allclose(final_state, want.final_state, 1e-10, 1e-10))
              << where << " " << with_initial;
        }
      }
    }
  }
}

struct Segmented {
  Tensor output, final_state, dq, dk, dv, dbeta, dgate, d_initial;
};

// [0, N) as the segments between consecutive cuts, each from the state the one before left; the
// backward walks them in reverse, each getting the next one's dL/dS₀ as its dL/dS_N.
Segmented run_segments(const Inputs& in, const std::vector<int64_t>& cuts, int64_t chunk) {
  Segmented out;
  out.output = zeros(in.v.shape(), DType::kF64);
  out.dq = zeros(in.q.shape(), DType::kF64);
  out.dk = zeros(in.k.shape(), DType::kF64);
  out.dv = zeros(in.v.shape(), DType::kF64);
  out.dbeta = zeros(in.beta.shape(), DType::kF64);
  if (in.gate.defined()) out.dgate = zeros(in.gate.shape(), DType::kF64);
  const auto part = [](const Tensor& x, int64_t begin, int64_t len) {
    return x.defined() ? x.narrow(2, begin, len) : Tensor();
  };
  std::vector<Tensor> starts;
  Tensor state = in.initial;
  for (size_t s = 0; s + 1 < cuts.size(); ++s) {
    const int64_t begin = cuts[s], len = cuts[s + 1] - cuts[s];
    starts.push_back(state);
    Tensor next;
    const Tensor o = backend::delta_rule_attention_forward(
        part(in.q, begin, len), part(in.k, begin, len), part(in.v, begin, len),
        part(in.beta, begin, len), part(in.gate, begin, len), chunk, state, &next);
    part(out.output, begin, len).copy_from(o);
    state = next;
  }
  out.final_state = state;
  Tensor carried = in.grad_final;
  for (size_t s = cuts.size() - 1; s-- > 0;) {
    const int64_t begin = cuts[s], len = cuts[s + 1] - cuts[s];
    const backend::DeltaRuleGrads g = backend::delta_rule_attention_backward(
        part(in.q, begin, len), part(in.k, begin, len), part(in.v, begin, len),
        part(in.beta, begin, len), part(in.gate, begin, len), part(in.grad_out, begin, len), chunk,
        starts[s], carried);
    part(out.dq, begin, len).copy_from(g.dq);
    part(out.dk, begin, len).copy_from(g.dk);
    part(out.dv, begin, len).copy_from(g.dv);
    part(out.dbeta, begin, len).copy_from(g.dbeta);
    if (in.gate.defined()) part(out.dgate, begin, len).copy_from(g.dlog_gate);
    carried = g.d_initial_state;
  }
  out.d_initial = carried;
  return out;
}

TEST(DeltaRuleAttentionState, SegmentsChainedThroughTheStateEqualTheWholeSequence) {
  const std::vector<std::vector<int64_t>> cut_lists = {
      {0, 11, 37}, {0, 11, 11, 30, 37}, {0, 1, 2, 36, 37}, {0, 16, 32, 37}};
  for (bool gated : {false, true}) {
    for (int64_t chunk : {1, 5, 16}) {
      Generator gen(chunk * 3 + (gated ? 1 : 0));
      const Inputs in = random_inputs(gen, 37, gated);
      const Segmented whole = run_segments(in, {0, 37}, chunk);
      for (const std::vector<int64_t>& cuts : cut_lists) {
        const Segmented parts = run_segments(in, cuts, chunk);
        std::string where =
            std::string(gated ? "gated" : "plain") + " chunk=" + std::to_string(chunk) + " cuts=";
        for (int64_t c : cuts) where += std::to_string(c) + ",";
        EXPECT_TRUE(allclose(parts.output, whole.output, 1e-12, 1e-12)) << where;
        EXPECT_TRUE(allclose(parts.final_state, whole.final_state, 1e-12, 1e-12)) << where;
        EXPECT_TRUE(allclose(parts.dq, whole.dq, 1e-12, 1e-12)) << where;
        EXPECT_TRUE(allclose(parts.dk, whole.dk, 1e-12, 1e-12)) << where;
        EXPECT_TRUE(allclose(parts.dv, whole.dv, 1e-12, 1e-12)) << where;
        EXPECT_TRUE(allclose(parts.dbeta, whole.dbeta, 1e-12, 1e-12)) << where;
        if (gated) {
          EXPECT_TRUE(allclose(parts.dgate, whole.dgate, 1e-11, 1e-11)) << where;
        }
        EXPECT_TRUE(allclose(parts.d_initial, whole.d_initial, 1e-12, 1e-12)) << where;
      }
    }
  }
}

TEST(DeltaRuleAttentionState, FloatMatchesDoubleWithStates) {
  Generator gen(5);
  for (bool gated : {false, true}) {
    const Inputs in = random_inputs(gen, 37, gated);
    const auto f32 = [](const Tensor& t) { return t.defined() ? t.to(DType::kF32) : t; };
    Tensor final64, final32;
    const Tensor o64 = backend::delta_rule_attention_forward(in.q, in.k, in.v, in.beta, in.gate, 16,
                                                             in.initial, &final64);
    const Tensor o32 = backend::delta_rule_attention_forward(
        f32(in.q), f32(in.k), f32(in.v), f32(in.beta), f32(in.gate), 16, f32(in.initial), &final32);
    EXPECT_TRUE(allclose(o32, f32(o64), 1e-4, 1e-4));
    EXPECT_TRUE(allclose(final32, f32(final64), 1e-4, 1e-4));
    const auto g64 = backend::delta_rule_attention_backward(
        in.q, in.k, in.v, in.beta, in.gate, in.grad_out, 16, in.initial, in.grad_final);
    const auto g32 = backend::delta_rule_attention_backward(
        f32(in.q), f32(in.k), f32(in.v), f32(in.beta), f32(in.gate), f32(in.grad_out), 16,
        f32(in.initial), f32(in.grad_final));
    EXPECT_TRUE(allclose(g32.dq, f32(g64.dq), 1e-4, 1e-4));
    EXPECT_TRUE(allclose(g32.dk, f32(g64.dk), 1e-4, 1e-4));
    EXPECT_TRUE(allclose(g32.dv, f32(g64.dv), 1e-4, 1e-4));
    EXPECT_TRUE(allclose(g32.dbeta, f32(g64.dbeta), 1e-4, 1e-4));
    if (gated) {
      EXPECT_TRUE(allclose(g32.dlog_gate, f32(g64.dlog_gate), 1e-4, 1e-4));
    }
    EXPECT_TRUE(allclose(g32.d_initial_state, f32(g64.d_initial_state), 1e-4, 1e-4));
  }
}

TEST(DeltaRuleAttentionState, EmptySequencePassesTheStateThrough) {
  Generator gen(3);
  const Inputs in = random_inputs(gen, 0, true);
  Tensor final_state;
  backend::delta_rule_attention_forward(in.q, in.k, in.v, in.beta, in.gate, 4, in.initial,
                                        &final_state);
  EXPECT_TRUE(allclose(final_state, in.initial, 0, 0));
  const auto grads = backend::delta_rule_attention_backward(
      in.q, in.k, in.v, in.beta, in.gate, in.grad_out, 4, in.initial, in.grad_final);
  EXPECT_TRUE(allclose(grads.d_initial_state, in.grad_final, 0, 0));
}

TEST(DeltaRuleAttentionState, AStateOfTheWrongShapeIsRefused) {
  Generator gen(4);
  const Inputs in = random_inputs(gen, 5, false);
  testing::expect_error(
      [&] {
        backend::delta_rule_attention_forward(in.q, in.k, in.v, in.beta, Tensor(), 4,
                                              zeros({2, 2, 4, 3}, DType::kF64));
      },
      "delta_rule_attention: initial state is f64 [2,2,4,3], expected f64 [2,2,3,4]");
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
