// SoftmaxAttention, T5 buckets and ALiBi slopes against the PyTorch reference's golden files.
#include <cctype>
#include <string>

#include <gtest/gtest.h>

#include "framework/nn/attention/softmax_attention.h"
#include "framework/nn/position/alibi.h"
#include "framework/nn/position/t5_bias.h"
#include "tests/support/allclose.h"
#include "tests/support/golden.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

// Cases from tests/reference/softmax_attention_reference.py: output and every gradient for
// none / rope / alibi / t5 × {causal, full} and end-aligned causal cross-attention.
using testing::allclose;
using testing::GoldenCase;

std::vector<std::string> layer_cases() {
  std::vector<std::string> out;
  for (const std::string& path : GoldenCase::list("softmax_attention")) {
    if (path.find("/table_") == std::string::npos) out.push_back(path);
  }
  return out;
}

/// The reference's encoding: "none", "rope" (adjacent pairs), "alibi" or "t5" with its buckets.
nn::PositionEncoding encoding_of(const nlohmann::json& cfg) {
  const std::string name = cfg.at("encoding").get<std::string>();
  if (name == "none") return nn::NoPosition{};
  if (name == "rope") return nn::RopePosition{};
  if (name == "alibi") return nn::AlibiPosition{};
  if (name == "t5") {
    return nn::T5Position{cfg.at("t5_num_buckets").get<int64_t>(),
                          cfg.at("t5_max_distance").get<int64_t>()};
  }
  throw Error("golden case: unknown encoding '" + name + "'");
}

void run_case(const GoldenCase& c, DType dtype, double rtol, double atol) {
  const auto& cfg = c.config();
  nn::SoftmaxAttentionOptions o;
  o.dim = cfg.at("dim").get<int64_t>();
  o.heads = cfg.at("heads").get<int64_t>();
  o.causal = cfg.at("causal").get<bool>();
  o.position = encoding_of(cfg);
  o.dtype = dtype;
  Generator gen(0);
  nn::SoftmaxAttention layer(o, gen);
  StateDict state;
  for (const std::string& name : c.names()) {
    if (name.rfind("param.", 0) == 0) state.insert(name.substr(6), c.tensor(name, dtype));
  }
  layer.load_state_dict(state, /*strict=*/true);

  nn::SoftmaxAttentionInputs inputs;
  inputs.query_offset = cfg.at("query_offset").get<int64_t>();
  if (c.has("key_padding_mask"))
    inputs.key_padding_mask = c.tensor("key_padding_mask", DType::kF32);
  Variable x(c.tensor("input", dtype), true);
  const bool cross = c.has("key_value_input");
  Variable kv = cross ? Variable(c.tensor("key_value_input", dtype), true) : x;
  const Variable out = cross ? layer.forward(x, kv, inputs) : layer.forward(x, inputs);
  out.backward(c.tensor("upstream", dtype));
  EXPECT_TRUE(allclose(out.data(), c.tensor("output", dtype), rtol, atol)) << "output";
  EXPECT_TRUE(allclose(x.grad(), c.tensor("grad.input", dtype), rtol, atol)) << "grad.input";
  if (cross) {
    EXPECT_TRUE(allclose(kv.grad(), c.tensor("grad.key_value_input", dtype), rtol, atol))
        << "grad.key_value_input";
  }
  int checked = 0;
  for (const auto& [name, p] : layer.named_parameters()) {
    if (!p.requires_grad()) continue;  // RoPE's frozen θ
    ASSERT_TRUE(c.has("grad." + name)) << name;
    EXPECT_TRUE(allclose(p.grad(), c.tensor("grad." + name, dtype), rtol, atol)) << name;
    ++checked;
  }
  EXPECT_GE(checked, 8);  // four projections with biases (+ the T5 table)
}

class SoftmaxAttentionGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(SoftmaxAttentionGolden, DoubleMatchesTightly) {
  run_case(GoldenCase::load(GetParam()), DType::kF64, 1e-9, 1e-10);
}

TEST_P(SoftmaxAttentionGolden, FloatMatchesToFloatPrecision) {
  run_case(GoldenCase::load(GetParam()), DType::kF32, 1e-4, 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Cases, SoftmaxAttentionGolden, ::testing::ValuesIn(layer_cases()),
                         rota::testing::GoldenTestName());

TEST(SoftmaxAttentionTables, T5BucketsMatchHuggingFaceForAllDistances) {
  const GoldenCase c = GoldenCase::load("softmax_attention/table_t5_buckets.json");
  const std::vector<double> t = c.tensor("t").to_double_vector();
  int tables = 0;
  for (const std::string& name : c.names()) {
    if (name == "t") continue;
    // name = "<num_buckets>_<max_distance>_<bidirectional|causal>"
    const size_t a = name.find('_'), b = name.find('_', a + 1);
    const int64_t num_buckets = std::stoll(name.substr(0, a));
    const int64_t max_distance = std::stoll(name.substr(a + 1, b - a - 1));
    const bool bidirectional = name.substr(b + 1) == "bidirectional";
    const std::vector<double> expected = c.tensor(name).to_double_vector();
    for (size_t e = 0; e < t.size(); ++e) {
      ASSERT_EQ(nn::t5_relative_bucket(static_cast<int64_t>(t[e]), bidirectional, num_buckets,
                                       max_distance),
                static_cast<int64_t>(expected[e]))
          << name << " t = " << t[e];
    }
    ++tables;
  }
  EXPECT_EQ(tables, 8);
}

TEST(SoftmaxAttentionTables, AlibiSlopesMatchTheReferenceRecursion) {
  const GoldenCase c = GoldenCase::load("softmax_attention/table_alibi_slopes.json");
  // The reference forms start·start^i by repeated products, a few ulps off the exact powers of
  // two that exp2 returns (e.g. 2^−8 at H = 16 comes out 1.1e−15 relative too small): 1e−14.
  for (int64_t h = 1; h <= 32; ++h) {
    const std::vector<double> slopes = nn::alibi_slopes(h);
    EXPECT_TRUE(
        allclose(tensor_from(slopes, {h}, DType::kF64), c.tensor(std::to_string(h)), 1e-14, 0))
        << "H = " << h;
  }
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
