// Causal linear attention with state carry: the chunked kernel with an initial state against the
// token recurrence, segments chained through their states against the whole sequence (outputs,
// final state and every gradient), f32 against f64, and bad states.
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "framework/backend/fused/linear_attention.h"
#include "framework/tensor/random.h"
#include "tests/support/allclose.h"
#include "tests/support/expect_error.h"
#include "tests/support/tensor_factory.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

using testing::allclose;
using testing::random_qkv;

struct Recurrence {
  Tensor output;       // [B, H, N, D]
  Tensor final_state;  // [B, H, F, D]
};

// The definition, token by token in double: S ← γ_h S + k_tᵀ v_t, o_t = q_t S, from S = S₀.
Recurrence recurrence(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& initial,
                      const std::vector<double>& gamma) {
  const int64_t heads = q.size(1), n = q.size(2), f = q.size(3), d = v.size(3);
  const int64_t groups = q.size(0) * heads;
  const std::vector<double> qv = q.to_double_vector(), kv = k.to_double_vector(),
                            vv = v.to_double_vector();
  std::vector<double> state =
      initial.defined() ? initial.to_double_vector() : std::vector<double>(groups * f * d, 0.0);
  std::vector<double> out(groups * n * d, 0.0);
  for (int64_t g = 0; g < groups; ++g) {
    const double gm = gamma.empty() ? 1.0 : gamma[g % heads];
    double* s = state.data() + g * f * d;
    for (int64_t t = 0; t < n; ++t) {
      for (int64_t a = 0; a < f; ++a) {
        for (int64_t b = 0; b < d; ++b) {
          s[a * d + b] = gm * s[a * d + b] + kv[(g * n + t) * f + a] * vv[(g * n + t) * d + b];
        }
      }
      for (int64_t b = 0; b < d; ++b) {
        double o = 0.0;
        for (int64_t a = 0; a < f; ++a) o += qv[(g * n + t) * f + a] * s[a * d + b];
        out[(g * n + t) * d + b] = o;
      }
    }
  }
  return {tensor_from(out, v.shape(), DType::kF64),
          tensor_from(state, {q.size(0), heads, f, d}, DType::kF64)};
}

Tensor decay_tensor(const std::vector<double>& gamma) {
  return gamma.empty() ? Tensor()
                       : tensor_from(gamma, {static_cast<int64_t>(gamma.size())}, DType::kF64);
}

TEST(CausalLinearAttentionState, InitialAndFinalStateMatchTheRecurrence) {
  for (const std::vector<double>& gamma : {std::vector<double>{}, std::vector<double>{0.8, 0.97}}) {
    for (int64_t n : {1, 5, 37}) {
      for (int64_t chunk : {1, 4, 64}) {
        Generator gen(n * 31 + chunk);
        const auto [q, k, v] = random_qkv(gen, 2, 2, n, 3, 4);
        const Tensor initial = randn({2, 2, 3, 4}, gen, 0, 1, DType::kF64);
        const Recurrence want = recurrence(q, k, v, initial, gamma);
        Tensor final_state;
        const Tensor o = backend::causal_linear_attention_forward(
            q, k, v, chunk, decay_tensor(gamma), initial, &final_state);
        const std::string where = "n=" + std::to_string(n) + " chunk=" + std::to_string(chunk) +
                                  " decay=" + std::to_string(gamma.size());
        EXPECT_TRUE(allclose(o, want.output, 1e-10, 1e-10)) << where;
        EXPECT_TRUE(allclose(final_state, want.final_state, 1e-10, 1e-10)) << where;
        // Without an initial state the final state is the keys' alone.
        Tensor from_zero;
        backend::causal_linear_attention_forward(q, k, v, chunk, decay_tensor(gamma), Tensor(),
                                                 &from_zero);
        EXPECT_TRUE(
            allclose(from_zero, recurrence(q, k, v, Tensor(), gamma).final_state, 1e-10, 1e-10))
            << where;
      }
    }
  }
}

struct WholeGrads {
  Tensor dq, dk, dv, d_initial;
};

// Runs [0, N) as the segments between consecutive cuts, each starting from the state the one
// before left; the backward walks the segments in reverse, each getting the next one's dL/dS₀ as
// its dL/dS_N. Returns the outputs and gradients stitched together along N.
struct Segmented {
  Tensor output, final_state;
  WholeGrads grads;
};

Segmented run_segments(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& initial,
                       const Tensor& grad_out, const Tensor& grad_final,
                       const std::vector<int64_t>& cuts, int64_t chunk, const Tensor& decay) {
  Segmented out;
  out.output = zeros(v.shape(), v.dtype());
  out.grads = {zeros(q.shape(), q.dtype()), zeros(k.shape(), k.dtype()),
               zeros(v.shape(), v.dtype()), Tensor()};
  std::vector<Tensor> starts;  // S₀ of each segment
  Tensor state = initial;
  for (size_t s = 0; s + 1 < cuts.size(); ++s) {
    const int64_t begin = cuts[s], len = cuts[s + 1] - cuts[s];
    starts.push_back(state);
    Tensor next;
    const Tensor o = backend::causal_linear_attention_forward(
        q.narrow(2, begin, len), k.narrow(2, begin, len), v.narrow(2, begin, len), chunk, decay,
        state, &next);
    out.output.narrow(2, begin, len).copy_from(o);
    state = next;
  }
  out.final_state = state;
  Tensor carried = grad_final;
  for (size_t s = cuts.size() - 1; s-- > 0;) {
    const int64_t begin = cuts[s], len = cuts[s + 1] - cuts[s];
    const backend::LinearAttentionGrads g = backend::causal_linear_attention_backward(
        q.narrow(2, begin, len), k.narrow(2, begin, len), v.narrow(2, begin, len),
        grad_out.narrow(2, begin, len), chunk, decay, starts[s], carried);
    out.grads.dq.narrow(2, begin, len).copy_from(g.dq);
    out.grads.dk.narrow(2, begin, len).copy_from(g.dk);
    out.grads.dv.narrow(2, begin, len).copy_from(g.dv);
    carried = g.d_initial_state;
  }
  out.grads.d_initial = carried;
  return out;
}

TEST(CausalLinearAttentionState, SegmentsChainedThroughTheStateEqualTheWholeSequence) {
  const std::vector<std::vector<int64_t>> cut_lists = {
      {0, 37}, {0, 11, 37}, {0, 11, 11, 30, 37}, {0, 1, 2, 36, 37}, {0, 16, 32, 37}};
  for (const std::vector<double>& gamma : {std::vector<double>{}, std::vector<double>{0.7, 0.99}}) {
    for (int64_t chunk : {1, 5, 16}) {
      Generator gen(chunk * 7 + static_cast<int64_t>(gamma.size()));
      const auto [q, k, v] = random_qkv(gen, 2, 2, 37, 3, 4);
      const Tensor initial = randn({2, 2, 3, 4}, gen, 0, 1, DType::kF64);
      const Tensor grad_out = randn({2, 2, 37, 4}, gen, 0, 1, DType::kF64);
      const Tensor grad_final = randn({2, 2, 3, 4}, gen, 0, 1, DType::kF64);
      const Tensor decay = decay_tensor(gamma);
      const Segmented whole =
          run_segments(q, k, v, initial, grad_out, grad_final, {0, 37}, chunk, decay);
      for (const std::vector<int64_t>& cuts : cut_lists) {
        const Segmented parts =
            run_segments(q, k, v, initial, grad_out, grad_final, cuts, chunk, decay);
        std::string where =
            "chunk=" + std::to_string(chunk) + " decay=" + std::to_string(gamma.size()) + " cuts=";
        for (int64_t c : cuts) where += std::to_string(c) + ",";
        EXPECT_TRUE(allclose(parts.output, whole.output, 1e-12, 1e-12)) << where;
        EXPECT_TRUE(allclose(parts.final_state, whole.final_state, 1e-12, 1e-12)) << where;
        EXPECT_TRUE(allclose(parts.grads.dq, whole.grads.dq, 1e-12, 1e-12)) << where;
        EXPECT_TRUE(allclose(parts.grads.dk, whole.grads.dk, 1e-12, 1e-12)) << where;
        EXPECT_TRUE(allclose(parts.grads.dv, whole.grads.dv, 1e-12, 1e-12)) << where;
        EXPECT_TRUE(allclose(parts.grads.d_initial, whole.grads.d_initial, 1e-12, 1e-12)) << where;
      }
    }
  }
}

// a − b elementwise, as a dense f64 tensor of a's shape.
Tensor difference(const Tensor& a, const Tensor& b) {
  std::vector<double> x = a.to_double_vector();
  const std::vector<double> y = b.to_double_vector();
  for (size_t i = 0; i < x.size(); ++i) x[i] -= y[i];
  return tensor_from(x, a.shape(), DType::kF64);
}

// The state gradients against their closed forms: dL/dS₀ = Σ_i γ^(i+1) q_iᵀ dO_i + γ^N dL/dS_N,
// and dL/dS_N reaching key j as γ^(N−1−j): dk_j gains γ^(N−1−j) v_j dL/dS_Nᵀ, dv_j gains
// γ^(N−1−j) k_j dL/dS_N (the difference of two backward calls, with and without dL/dS_N).
TEST(CausalLinearAttentionState, StateGradientsMatchTheirClosedForms) {
  const int64_t n = 23, f = 3, d = 4;
  for (const std::vector<double>& gamma : {std::vector<double>{}, std::vector<double>{0.75, 0.9}}) {
    Generator gen(11 + static_cast<int64_t>(gamma.size()));
    const auto [q, k, v] = random_qkv(gen, 1, 2, n, f, d);
    const Tensor initial = randn({1, 2, f, d}, gen, 0, 1, DType::kF64);
    const Tensor grad_out = randn({1, 2, n, d}, gen, 0, 1, DType::kF64);
    const Tensor grad_final = randn({1, 2, f, d}, gen, 0, 1, DType::kF64);
    const Tensor decay = decay_tensor(gamma);
    const auto with =
        backend::causal_linear_attention_backward(q, k, v, grad_out, 8, decay, initial, grad_final);
    const auto without =
        backend::causal_linear_attention_backward(q, k, v, grad_out, 8, decay, initial, Tensor());
    const std::vector<double> qv = q.to_double_vector(), kv = k.to_double_vector(),
                              vv = v.to_double_vector(), gv = grad_out.to_double_vector(),
                              gf = grad_final.to_double_vector();
    std::vector<double> d_initial(2 * f * d, 0.0), dk_extra(2 * n * f, 0.0),
        dv_extra(2 * n * d, 0.0);
    for (int64_t h = 0; h < 2; ++h) {
      const double gm = gamma.empty() ? 1.0 : gamma[h];
      for (int64_t a = 0; a < f; ++a) {
        for (int64_t b = 0; b < d; ++b) {
          double sum = std::pow(gm, n) * gf[(h * f + a) * d + b];
          for (int64_t i = 0; i < n; ++i) {
            sum += std::pow(gm, i + 1) * qv[(h * n + i) * f + a] * gv[(h * n + i) * d + b];
          }
          d_initial[(h * f + a) * d + b] = sum;
        }
      }
      for (int64_t j = 0; j < n; ++j) {
        const double w = std::pow(gm, n - 1 - j);
        for (int64_t a = 0; a < f; ++a) {
          for (int64_t b = 0; b < d; ++b) {
            dk_extra[(h * n + j) * f + a] += w * vv[(h * n + j) * d + b] * gf[(h * f + a) * d + b];
            dv_extra[(h * n + j) * d + b] += w * kv[(h * n + j) * f + a] * gf[(h * f + a) * d + b];
          }
        }
      }
    }
    EXPECT_TRUE(allclose(with.d_initial_state, tensor_from(d_initial, {1, 2, f, d}, DType::kF64),
                         1e-10, 1e-10));
    EXPECT_TRUE(allclose(difference(with.dk, without.dk),
                         tensor_from(dk_extra, q.shape(), DType::kF64), 1e-10, 1e-10));
    EXPECT_TRUE(allclose(difference(with.dv, without.dv),
                         tensor_from(dv_extra, v.shape(), DType::kF64), 1e-10, 1e-10));
    EXPECT_TRUE(allclose(with.dq, without.dq, 0, 0));  // S_N does not depend on q
  }
}

TEST(CausalLinearAttentionState, FloatMatchesDoubleWithStates) {
  Generator gen(5);
  const auto [q, k, v] = random_qkv(gen, 2, 2, 37, 8, 8);
  const Tensor initial = randn({2, 2, 8, 8}, gen, 0, 1, DType::kF64);
  const Tensor grad_out = randn({2, 2, 37, 8}, gen, 0, 1, DType::kF64);
  const Tensor grad_final = randn({2, 2, 8, 8}, gen, 0, 1, DType::kF64);
  const Tensor decay = tensor_from({0.9, 0.99}, {2}, DType::kF64);
  Tensor final64, final32;
  const Tensor o64 =
      backend::causal_linear_attention_forward(q, k, v, 16, decay, initial, &final64);
  const auto f32 = [](const Tensor& t) { return t.to(DType::kF32); };
  const Tensor o32 = backend::causal_linear_attention_forward(f32(q), f32(k), f32(v), 16,
                                                              f32(decay), f32(initial), &final32);
  EXPECT_TRUE(allclose(o32, f32(o64), 1e-4, 1e-4));
  EXPECT_TRUE(allclose(final32, f32(final64), 1e-4, 1e-4));
  const auto g64 =
      backend::causal_linear_attention_backward(q, k, v, grad_out, 16, decay, initial, grad_final);
  const auto g32 = backend::causal_linear_attention_backward(
      f32(q), f32(k), f32(v), f32(grad_out), 16, f32(decay), f32(initial), f32(grad_final));
  EXPECT_TRUE(allclose(g32.dq, f32(g64.dq), 1e-4, 1e-4));
  EXPECT_TRUE(allclose(g32.dk, f32(g64.dk), 1e-4, 1e-4));
  EXPECT_TRUE(allclose(g32.dv, f32(g64.dv), 1e-4, 1e-4));
  EXPECT_TRUE(allclose(g32.d_initial_state, f32(g64.d_initial_state), 1e-4, 1e-4));
}

TEST(CausalLinearAttentionState, EmptySequencePassesTheStateThrough) {
  Generator gen(3);
  const auto [q, k, v] = random_qkv(gen, 1, 2, 0, 3, 4);
  const Tensor initial = randn({1, 2, 3, 4}, gen, 0, 1, DType::kF64);
  const Tensor grad_final = randn({1, 2, 3, 4}, gen, 0, 1, DType::kF64);
  Tensor final_state;
  backend::causal_linear_attention_forward(q, k, v, 4, Tensor(), initial, &final_state);
  EXPECT_TRUE(allclose(final_state, initial, 0, 0));
  const auto grads = backend::causal_linear_attention_backward(q, k, v, zeros(v.shape(), v.dtype()),
                                                               4, Tensor(), initial, grad_final);
  EXPECT_TRUE(allclose(grads.d_initial_state, grad_final, 0, 0));
}

TEST(CausalLinearAttentionState, AStateOfTheWrongShapeOrTypeIsRefused) {
  Generator gen(4);
  const auto [q, k, v] = random_qkv(gen, 1, 2, 5, 3, 4);
  testing::expect_error(
      [&] {
        backend::causal_linear_attention_forward(q, k, v, 4, Tensor(),
                                                 zeros({1, 2, 4, 3}, DType::kF64));
      },
      "causal_linear_attention: initial state is f64 [1,2,4,3], expected f64 [1,2,3,4]");
  testing::expect_error(
      [&] {
        backend::causal_linear_attention_backward(q, k, v, zeros(v.shape(), v.dtype()), 4, Tensor(),
                                                  Tensor(), zeros({1, 2, 3, 4}, DType::kF32));
      },
      "causal_linear_attention_backward: final state's gradient is f32 [1,2,3,4], expected f64");
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
