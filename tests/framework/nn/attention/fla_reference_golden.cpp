// Rota's decay, gating and delta-rule kernels against flash-linear-attention's reference forms
// (goldens of tests/reference/fla_reference.py): output, final state and every input's gradient,
// in f64 and f32, at chunk sizes that leave ragged chunk ends.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "framework/backend/fused/delta_rule_attention.h"
#include "framework/backend/fused/gated_linear_attention.h"
#include "framework/backend/fused/linear_attention.h"
#include "framework/nn/attention/state_decay.h"
#include "tests/support/allclose.h"
#include "tests/support/golden.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

using testing::GoldenCase;
using testing::max_relative_error;

// What Rota's kernels give for a case: the output, the final state (undefined for retention, whose
// fla form has no state) and the gradients under the golden names.
struct KernelResult {
  Tensor out;
  Tensor final_state;
  std::vector<std::pair<std::string, Tensor>> grads;
};

Tensor scaled(const Tensor& t, double factor) {
  std::vector<double> values = t.to_double_vector();
  for (double& x : values) x *= factor;
  return tensor_from(values, t.shape(), t.dtype());
}

// Rota's kernel for the case's fla form, on the golden inputs in `dtype`, with the mapping of
// fla_reference.py's docstring: q enters as q · q_scale and dq leaves multiplied by q_scale.
KernelResult run_rota(const GoldenCase& c, DType dtype, int64_t chunk) {
  const std::string kind = c.config().at("kind");
  const double q_scale = c.config().at("q_scale");
  const Tensor q = scaled(c.tensor("q", DType::kF64), q_scale).to(dtype);
  const Tensor k = c.tensor("k", dtype), v = c.tensor("v", dtype);
  const Tensor grad_out = c.tensor("grad_out", dtype);
  const bool stateful = c.has("initial_state");
  const Tensor initial = stateful ? c.tensor("initial_state", dtype) : Tensor();
  const Tensor grad_final = stateful ? c.tensor("grad_final_state", dtype) : Tensor();
  const Shape& qs = q.shape();  // [B, H, N, F]
  KernelResult r;
  Tensor* final_state = stateful ? &r.final_state : nullptr;
  auto add_qkv = [&](const Tensor& dq, const Tensor& dk, const Tensor& dv) {
    r.grads.emplace_back("dq", scaled(dq, q_scale));
    r.grads.emplace_back("dk", dk);
    r.grads.emplace_back("dv", dv);
  };
  if (kind == "linear_attn" || kind == "retention" || kind == "transnormer_decay") {
    Tensor decay;
    if (kind != "linear_attn") {
      // The rates as Rota's `decay { schedule: RETNET }` or `{ schedule: TRANSNORMER }` (for the
      // case's block of its stack) computes them; the golden's own come from fla's form
      // (retention) or from the script's ALiBi slopes (TransNormer).
      nn::StateDecayOptions options;
      options.schedule =
          kind == "retention" ? nn::DecaySchedule::kRetNet : nn::DecaySchedule::kTransNormer;
      if (kind == "transnormer_decay") {
        options.layer = c.config().at("layer");
        options.layers = c.config().at("layers");
      }
      decay = tensor_from(nn::state_decay_rates(options, qs[1]), {qs[1]}, dtype);
    }
    r.out = backend::causal_linear_attention_forward(q, k, v, chunk, decay, initial, final_state);
    const backend::LinearAttentionGrads g = backend::causal_linear_attention_backward(
        q, k, v, grad_out, chunk, decay, initial, grad_final);
    add_qkv(g.dq, g.dk, g.dv);
    if (stateful) r.grads.emplace_back("dinitial_state", g.d_initial_state);
  } else if (kind == "gla" || kind == "simple_gla") {
    // fla's scalar gate [B, H, N] is Rota's [B, H, N, 1].
    const Tensor gate = kind == "gla" ? c.tensor("log_gate", dtype)
                                      : c.tensor("log_gate", dtype).view({qs[0], qs[1], qs[2], 1});
    r.out = backend::gated_linear_attention_forward(q, k, v, gate, chunk, initial, final_state);
    const backend::GatedLinearAttentionGrads g = backend::gated_linear_attention_backward(
        q, k, v, gate, grad_out, chunk, initial, grad_final);
    add_qkv(g.dq, g.dk, g.dv);
    r.grads.emplace_back("dlog_gate", g.dlog_gate.contiguous().view(c.tensor("log_gate").shape()));
    r.grads.emplace_back("dinitial_state", g.d_initial_state);
  } else if (kind == "delta_rule" || kind == "gated_delta_rule") {
    const Tensor beta = c.tensor("beta", dtype);
    const Tensor gate = kind == "gated_delta_rule" ? c.tensor("log_gate", dtype) : Tensor();
    r.out = backend::delta_rule_attention_forward(q, k, v, beta, gate, chunk, initial, final_state);
    const backend::DeltaRuleGrads g = backend::delta_rule_attention_backward(
        q, k, v, beta, gate, grad_out, chunk, initial, grad_final);
    add_qkv(g.dq, g.dk, g.dv);
    r.grads.emplace_back("dbeta", g.dbeta);
    if (gate.defined()) r.grads.emplace_back("dlog_gate", g.dlog_gate);
    r.grads.emplace_back("dinitial_state", g.d_initial_state);
  } else {
    throw Error("fla golden case: unknown kind '" + kind + "'");
  }
  return r;
}

// ‖Rota − fla‖∞ / ‖fla‖∞ of every compared tensor must stay within `bound`: f64 inputs leave only
// summation order between the two (measured worst over all cases and chunk sizes: 1.4e-15); f32
// rounds the inputs and computes in f32 (measured worst: 5.1e-7). Both bounds are ~10x that.
constexpr double kBoundF64 = 1e-14;
constexpr double kBoundF32 = 5e-6;

class FlaReference : public ::testing::TestWithParam<std::string> {};

TEST_P(FlaReference, OutputStateAndEveryGradientMatchFlasForm) {
  const GoldenCase c = GoldenCase::load(GetParam());
  // Chunks of 1 row, of 4 (N = 6, 45: ragged ends) and wider than the sequence.
  for (const int64_t chunk : {1, 4, 16, 64}) {
    for (const DType dtype : {DType::kF64, DType::kF32}) {
      SCOPED_TRACE("chunk " + std::to_string(chunk) + ", " + dtype_name(dtype));
      const double bound = dtype == DType::kF64 ? kBoundF64 : kBoundF32;
      const KernelResult r = run_rota(c, dtype, chunk);
      EXPECT_LE(max_relative_error(r.out, c.tensor("out")), bound) << "out";
      if (c.has("final_state")) {
        EXPECT_LE(max_relative_error(r.final_state, c.tensor("final_state")), bound)
            << "final_state";
      } else {
        EXPECT_FALSE(r.final_state.defined());
      }
      size_t golden_grads = 0;
      for (const std::string& name : c.names()) golden_grads += name.rfind("d", 0) == 0;
      EXPECT_EQ(r.grads.size(), golden_grads) << "every input's gradient is compared";
      for (const auto& [name, grad] : r.grads) {
        ASSERT_TRUE(c.has(name)) << name;
        EXPECT_EQ(grad.shape(), c.tensor(name).shape()) << name;
        EXPECT_LE(max_relative_error(grad, c.tensor(name)), bound) << name;
      }
    }
  }
}

// Every fla form the script writes is here, at each length (a missing golden fails, not skips).
TEST(FlaReferenceCases, EveryFormAtEveryLengthIsCommitted) {
  const std::vector<std::string> cases = GoldenCase::list("fla");
  for (const char* kind : {"linear_attn", "retention", "transnormer_decay", "simple_gla", "gla",
                           "delta_rule", "gated_delta_rule"}) {
    for (const int n : {1, 6, 45}) {
      const std::string name = "fla/" + std::string(kind) + "_n" + std::to_string(n) + ".json";
      EXPECT_NE(std::find(cases.begin(), cases.end(), name), cases.end()) << name;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Fla, FlaReference, ::testing::ValuesIn(GoldenCase::list("fla")),
                         testing::GoldenTestName());

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
