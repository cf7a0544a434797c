// LinearAttention + LRPE against the PyTorch reference
// (tests/reference/linear_attention_reference.py): output and every gradient, for each Type × P ×
// {causal, bidirectional}, and causal cases with RetNet's / TransNormerLLM's decay, GroupNorm,
// output gates, a learnable decay, GLA, Mamba-2's SSD, DeltaNet and Gated DeltaNet.
#include <cctype>
#include <string>

#include <gtest/gtest.h>

#include "framework/nn/attention/linear_attention.h"
#include "tests/support/allclose.h"
#include "tests/support/golden.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

using testing::allclose;
using testing::GoldenCase;

/// The reference's names: core "type1" | "type2" | "type3", P "identity" | "householder"
/// (learnable) | "odd_even".
nn::LrpeOptions lrpe_from(const std::string& core, const std::string& p) {
  nn::LrpeOptions lrpe;
  if (core == "type1") {
    lrpe.core = backend::LrpeCore::kUnitary;
  } else if (core == "type2") {
    lrpe.core = backend::LrpeCore::kOrthogonal;
  } else if (core == "type3") {
    lrpe.core = backend::LrpeCore::kPermutation;
  } else {
    throw Error("golden case: unknown core '" + core + "'");
  }
  if (p == "identity") {
    lrpe.p = backend::LrpeP::kIdentity;
  } else if (p == "householder") {
    lrpe.p = backend::LrpeP::kHouseholder;
  } else if (p == "odd_even") {
    lrpe.p = backend::LrpeP::kOddEven;
  } else {
    throw Error("golden case: unknown P '" + p + "'");
  }
  return lrpe;
}

/// The reference's optional decay/gating keys: decay "retnet" | "transnormer" (with layer,
/// layers), learnable_decay, gating "gla" (gla_rank, gla_temperature) | "ssd", rule "additive" |
/// "delta", norm "layer" | "group", gate "none" | "swish" | "sigmoid".
void set_decay_and_gating(const nlohmann::json& cfg, nn::LinearAttentionOptions& o) {
  const std::string decay = cfg.value("decay", "none");
  if (decay == "retnet") {
    o.decay.schedule = nn::DecaySchedule::kRetNet;
  } else if (decay == "transnormer") {
    o.decay.schedule = nn::DecaySchedule::kTransNormer;
    o.decay.layer = cfg.at("layer").get<int64_t>();
    o.decay.layers = cfg.at("layers").get<int64_t>();
  } else if (decay != "none") {
    throw Error("golden case: unknown decay '" + decay + "'");
  }
  o.decay.learnable = cfg.value("learnable_decay", false);
  const std::string gating = cfg.value("gating", "none");
  if (gating == "gla") {
    o.state_gate.gating = nn::StateGating::kGla;
    o.state_gate.gla_rank = cfg.at("gla_rank").get<int64_t>();
    o.state_gate.gla_temperature = cfg.at("gla_temperature").get<double>();
  } else if (gating == "ssd") {
    o.state_gate.gating = nn::StateGating::kSsd;
  } else if (gating != "none") {
    throw Error("golden case: unknown gating '" + gating + "'");
  }
  const std::string rule = cfg.value("rule", "additive");
  if (rule == "delta") {
    o.state_gate.rule = nn::UpdateRule::kDelta;
  } else if (rule != "additive") {
    throw Error("golden case: unknown rule '" + rule + "'");
  }
  const std::string norm = cfg.value("norm", "layer");
  if (norm == "group") {
    o.norm = nn::LinearAttentionNorm::kGroupNorm;
  } else if (norm != "layer") {
    throw Error("golden case: unknown norm '" + norm + "'");
  }
  const std::string gate = cfg.value("gate", "none");
  if (gate == "swish") {
    o.output_gate = nn::OutputGate::kSwish;
  } else if (gate == "sigmoid") {
    o.output_gate = nn::OutputGate::kSigmoid;
  } else if (gate != "none") {
    throw Error("golden case: unknown gate '" + gate + "'");
  }
}

class LinearAttentionGolden : public ::testing::TestWithParam<std::string> {};

void run_case(const GoldenCase& c, DType dtype, double rtol, double atol) {
  const auto& cfg = c.config();
  nn::LinearAttentionOptions o;
  o.dim = cfg.at("dim").get<int64_t>();
  o.heads = cfg.at("heads").get<int64_t>();
  o.causal = cfg.at("causal").get<bool>();
  o.chunk_size = 3;  // the reference forms the N×N matrix; chunking must not matter
  o.dtype = dtype;
  o.position = lrpe_from(cfg.at("core").get<std::string>(), cfg.at("p").get<std::string>());
  set_decay_and_gating(cfg, o);
  Generator gen(0);
  nn::LinearAttention layer(o, gen);
  StateDict state;
  for (const std::string& name : c.names()) {
    if (name.rfind("param.", 0) == 0) state.insert(name.substr(6), c.tensor(name, dtype));
  }
  if (c.has("lrpe.permutation")) {
    state.insert("lrpe.permutation", c.tensor("lrpe.permutation").to(DType::kI64));
  }
  layer.load_state_dict(state, /*strict=*/true);

  Variable x(c.tensor("input", dtype), true);
  const Tensor mask = c.has("key_mask") ? c.tensor("key_mask", DType::kF32) : Tensor();
  const Variable out = layer.forward(x, mask);
  out.backward(c.tensor("upstream", dtype));
  EXPECT_TRUE(allclose(out.data(), c.tensor("output", dtype), rtol, atol)) << "output";
  EXPECT_TRUE(allclose(x.grad(), c.tensor("grad.input", dtype), rtol, atol)) << "grad.input";
  for (const auto& [name, p] : layer.named_parameters()) {
    ASSERT_TRUE(c.has("grad." + name)) << name;
    EXPECT_TRUE(allclose(p.grad(), c.tensor("grad." + name, dtype), rtol, atol)) << name;
  }
}

TEST_P(LinearAttentionGolden, DoubleMatchesTightly) {
  run_case(GoldenCase::load(GetParam()), DType::kF64, 1e-9, 1e-10);
}

TEST_P(LinearAttentionGolden, FloatMatchesToFloatPrecision) {
  run_case(GoldenCase::load(GetParam()), DType::kF32, 1e-4, 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Cases, LinearAttentionGolden,
                         ::testing::ValuesIn(GoldenCase::list("linear_attention")),
                         rota::testing::GoldenTestName());

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
