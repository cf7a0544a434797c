// Gated linear attention with state carry: the chunked kernel with an initial state against the
// token recurrence, and segments chained through their states against the whole sequence
// (outputs, final state and every gradient, the gates' included), per-channel and scalar gates,
// f32 against f64.
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "framework/backend/fused/gated_linear_attention.h"
#include "framework/tensor/random.h"
#include "tests/support/allclose.h"
#include "tests/support/expect_error.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

using testing::allclose;

struct Recurrence {
  Tensor output;       // [G..., N, D]
  Tensor final_state;  // [G..., F, D]
};

// The definition, token by token in double: S ← diag(e^(g_t)) S + k_tᵀ v_t, o_t = q_t S, from S₀.
Recurrence recurrence(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& gate,
                      const Tensor& initial) {
  const int64_t n = q.size(-2), f = q.size(-1), d = v.size(-1), gw = gate.size(-1);
  const int64_t groups = q.numel() / std::max<int64_t>(n * f, 1);
  const std::vector<double> qv = q.to_double_vector(), kv = k.to_double_vector(),
                            vv = v.to_double_vector(), gv = gate.to_double_vector();
  std::vector<double> state =
      initial.defined() ? initial.to_double_vector() : std::vector<double>(groups * f * d, 0.0);
  std::vector<double> out(groups * n * d, 0.0);
  for (int64_t g = 0; g < groups; ++g) {
    double* s = state.data() + g * f * d;
    for (int64_t t = 0; t < n; ++t) {
      for (int64_t a = 0; a < f; ++a) {
        const double decay = std::exp(gv[(g * n + t) * gw + (gw == 1 ? 0 : a)]);
        for (int64_t b = 0; b < d; ++b) {
          s[a * d + b] = decay * s[a * d + b] + kv[(g * n + t) * f + a] * vv[(g * n + t) * d + b];
        }
      }
      for (int64_t b = 0; b < d; ++b) {
        double o = 0.0;
        for (int64_t a = 0; a < f; ++a) o += qv[(g * n + t) * f + a] * s[a * d + b];
        out[(g * n + t) * d + b] = o;
      }
    }
  }
  Shape state_shape = q.shape();
  state_shape[state_shape.size() - 2] = f;
  state_shape.back() = d;
  return {tensor_from(out, v.shape(), DType::kF64), tensor_from(state, state_shape, DType::kF64)};
}

struct Inputs {
  Tensor q, k, v, gate, initial, grad_out, grad_final;
};

Inputs random_inputs(Generator& gen, int64_t n, int64_t gate_width) {
  Inputs in;
  in.q = randn({2, 2, n, 3}, gen, 0, 1, DType::kF64);
  in.k = randn({2, 2, n, 3}, gen, 0, 1, DType::kF64);
  in.v = randn({2, 2, n, 4}, gen, 0, 1, DType::kF64);
  in.gate = rand({2, 2, n, gate_width}, gen, -1.5, 0.0, DType::kF64);
  in.initial = randn({2, 2, 3, 4}, gen, 0, 1, DType::kF64);
  in.grad_out = randn({2, 2, n, 4}, gen, 0, 1, DType::kF64);
  in.grad_final = randn({2, 2, 3, 4}, gen, 0, 1, DType::kF64);
  return in;
}

TEST(GatedLinearAttentionState, InitialAndFinalStateMatchTheRecurrence) {
  for (int64_t width : {int64_t{3}, int64_t{1}}) {
    for (int64_t n : {1, 5, 37}) {
      for (int64_t chunk : {1, 4, 64}) {
        Generator gen(n * 17 + chunk + width);
        const Inputs in = random_inputs(gen, n, width);
        const Recurrence want = recurrence(in.q, in.k, in.v, in.gate, in.initial);
        Tensor final_state;
        const Tensor o = backend::gated_linear_attention_forward(in.q, in.k, in.v, in.gate, chunk,
                                                                 in.initial, &final_state);
        const std::string where = "width=" + std::to_string(width) + " n=" + std::to_string(n) +
                                  " chunk=" + std::to_string(chunk);
        EXPECT_TRUE(allclose(o, want.output, 1e-10, 1e-10)) << where;
        EXPECT_TRUE(allclose(final_state, want.final_state, 1e-10, 1e-10)) << where;
        Tensor from_zero;
        backend::gated_linear_attention_forward(in.q, in.k, in.v, in.gate, chunk, Tensor(),
                                                &from_zero);
        EXPECT_TRUE(allclose(from_zero, recurrence(in.q, in.k, in.v, in.gate, Tensor()).final_state,
                             1e-10, 1e-10))
            << where;
      }
    }
  }
}

struct Segmented {
  Tensor output, final_state, dq, dk, dv, dgate, d_initial;
};

// [0, N) as the segments between consecutive cuts, each from the state the one before left; the
// backward walks them in reverse, each getting the next one's dL/dS₀ as its dL/dS_N.
Segmented run_segments(const Inputs& in, const std::vector<int64_t>& cuts, int64_t chunk) {
  Segmented out;
  out.output = zeros(in.v.shape(), DType::kF64);
  out.dq = zeros(in.q.shape(), DType::kF64);
  out.dk = zeros(in.k.shape(), DType::kF64);
  out.dv = zeros(in.v.shape(), DType::kF64);
  out.dgate = zeros(in.gate.shape(), DType::kF64);
  const auto part = [](const Tensor& x, int64_t begin, int64_t len) {
    return x.narrow(2, begin, len);
  };
  std::vector<Tensor> starts;
  Tensor state = in.initial;
  for (size_t s = 0; s + 1 < cuts.size(); ++s) {
    const int64_t begin = cuts[s], len = cuts[s + 1] - cuts[s];
    starts.push_back(state);
    Tensor next;
    const Tensor o = backend::gated_linear_attention_forward(
        part(in.q, begin, len), part(in.k, begin, len), part(in.v, begin, len),
        part(in.gate, begin, len), chunk, state, &next);
    part(out.output, begin, len).copy_from(o);
    state = next;
  }
  out.final_state = state;
  Tensor carried = in.grad_final;
  for (size_t s = cuts.size() - 1; s-- > 0;) {
    const int64_t begin = cuts[s], len = cuts[s + 1] - cuts[s];
    const backend::GatedLinearAttentionGrads g = backend::gated_linear_attention_backward(
        part(in.q, begin, len), part(in.k, begin, len), part(in.v, begin, len),
        part(in.gate, begin, len), part(in.grad_out, begin, len), chunk, starts[s], carried);
    part(out.dq, begin, len).copy_from(g.dq);
    part(out.dk, begin, len).copy_from(g.dk);
    part(out.dv, begin, len).copy_from(g.dv);
    part(out.dgate, begin, len).copy_from(g.dlog_gate);
    carried = g.d_initial_state;
  }
  out.d_initial = carried;
  return out;
}

TEST(GatedLinearAttentionState, SegmentsChainedThroughTheStateEqualTheWholeSequence) {
  const std::vector<std::vector<int64_t>> cut_lists = {
      {0, 11, 37}, {0, 11, 11, 30, 37}, {0, 1, 2, 36, 37}, {0, 16, 32, 37}};
  for (int64_t width : {int64_t{3}, int64_t{1}}) {
    for (int64_t chunk : {1, 5, 16}) {
      Generator gen(chunk * 7 + width);
      const Inputs in = random_inputs(gen, 37, width);
      const Segmented whole = run_segments(in, {0, 37}, chunk);
      for (const std::vector<int64_t>& cuts : cut_lists) {
        const Segmented parts = run_segments(in, cuts, chunk);
        std::string where =
            "width=" + std::to_string(width) + " chunk=" + std::to_string(chunk) + " cuts=";
        for (int64_t c : cuts) where += std::to_string(c) + ",";
        EXPECT_TRUE(allclose(parts.output, whole.output, 1e-12, 1e-12)) << where;
        EXPECT_TRUE(allclose(parts.final_state, whole.final_state, 1e-12, 1e-12)) << where;
        EXPECT_TRUE(allclose(parts.dq, whole.dq, 1e-12, 1e-12)) << where;
        EXPECT_TRUE(allclose(parts.dk, whole.dk, 1e-12, 1e-12)) << where;
        EXPECT_TRUE(allclose(parts.dv, whole.dv, 1e-12, 1e-12)) << where;
        EXPECT_TRUE(allclose(parts.dgate, whole.dgate, 1e-11, 1e-11)) << where;
        EXPECT_TRUE(allclose(parts.d_initial, whole.d_initial, 1e-12, 1e-12)) << where;
      }
    }
  }
}

TEST(GatedLinearAttentionState, FloatMatchesDoubleWithStates) {
  Generator gen(5);
  for (int64_t width : {int64_t{3}, int64_t{1}}) {
    const Inputs in = random_inputs(gen, 37, width);
    const auto f32 = [](const Tensor& t) { return t.to(DType::kF32); };
    Tensor final64, final32;
    const Tensor o64 = backend::gated_linear_attention_forward(in.q, in.k, in.v, in.gate, 16,
                                                               in.initial, &final64);
    const Tensor o32 = backend::gated_linear_attention_forward(
        f32(in.q), f32(in.k), f32(in.v), f32(in.gate), 16, f32(in.initial), &final32);
    EXPECT_TRUE(allclose(o32, f32(o64), 1e-4, 1e-4));
    EXPECT_TRUE(allclose(final32, f32(final64), 1e-4, 1e-4));
    const auto g64 = backend::gated_linear_attention_backward(
        in.q, in.k, in.v, in.gate, in.grad_out, 16, in.initial, in.grad_final);
    const auto g32 = backend::gated_linear_attention_backward(f32(in.q), f32(in.k), f32(in.v),
                                                              f32(in.gate), f32(in.grad_out), 16,
                                                              f32(in.initial), f32(in.grad_final));
    EXPECT_TRUE(allclose(g32.dq, f32(g64.dq), 1e-4, 1e-4));
    EXPECT_TRUE(allclose(g32.dk, f32(g64.dk), 1e-4, 1e-4));
    EXPECT_TRUE(allclose(g32.dv, f32(g64.dv), 1e-4, 1e-4));
    EXPECT_TRUE(allclose(g32.dlog_gate, f32(g64.dlog_gate), 1e-4, 1e-4));
    EXPECT_TRUE(allclose(g32.d_initial_state, f32(g64.d_initial_state), 1e-4, 1e-4));
  }
}

TEST(GatedLinearAttentionState, EmptySequencePassesTheStateThrough) {
  Generator gen(3);
  const Inputs in = random_inputs(gen, 0, 3);
  Tensor final_state;
  backend::gated_linear_attention_forward(in.q, in.k, in.v, in.gate, 4, in.initial, &final_state);
  EXPECT_TRUE(allclose(final_state, in.initial, 0, 0));
  const auto grads = backend::gated_linear_attention_backward(
      in.q, in.k, in.v, in.gate, in.grad_out, 4, in.initial, in.grad_final);
  EXPECT_TRUE(allclose(grads.d_initial_state, in.grad_final, 0, 0));
}

TEST(GatedLinearAttentionState, AStateOfTheWrongShapeIsRefused) {
  Generator gen(4);
  const Inputs in = random_inputs(gen, 5, 3);
  testing::expect_error(
      [&] {
        backend::gated_linear_attention_forward(in.q, in.k, in.v, in.gate, 4,
                                                zeros({2, 2, 4, 3}, DType::kF64));
      },
      "gated_linear_attention: initial state is f64 [2,2,4,3], expected f64 [2,2,3,4]");
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
