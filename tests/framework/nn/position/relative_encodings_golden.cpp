// Shaw / Transformer-XL / skew encodings against the PyTorch reference
// (tests/reference/relative_encodings_reference.py): output and the gradients of q, k, v and
// every parameter, causal and not, self and cross.
#include <cctype>
#include <cmath>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "framework/nn/position/relative_xl.h"
#include "framework/nn/position/shaw.h"
#include "framework/nn/position/skew.h"
#include "tests/support/allclose.h"
#include "tests/support/golden.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

using testing::allclose;
using testing::GoldenCase;

std::shared_ptr<nn::RelativeAttentionEncoding> build(const nlohmann::json& cfg, DType dtype) {
  Generator gen(0);
  const std::string kind = cfg.at("encoding").get<std::string>();
  const int64_t d = cfg.at("head_dim").get<int64_t>();
  if (kind == "shaw") {
    nn::ShawOptions o;
    o.head_dim = d;
    o.clip = cfg.at("clip").get<int64_t>();
    o.values = cfg.at("values").get<bool>();
    o.dtype = dtype;
    return std::make_shared<nn::ShawRelativeEncoding>(o, gen);
  }
  if (kind == "xl") {
    nn::RelativeXlOptions o;
    o.heads = cfg.at("heads").get<int64_t>();
    o.head_dim = d;
    o.pe_dim = cfg.at("pe_dim").get<int64_t>();
    o.layout = cfg.at("layout").get<std::string>() == "interleaved"
                   ? nn::SinusoidLayout::kInterleaved
                   : nn::SinusoidLayout::kConcatenated;
    o.dtype = dtype;
    return std::make_shared<nn::RelativeXlEncoding>(o, gen);
  }
  nn::SkewOptions o;
  o.head_dim = d;
  o.max_len = cfg.at("max_len").get<int64_t>();
  o.dtype = dtype;
  return std::make_shared<nn::SkewRelativeEncoding>(o, gen);
}

void run_case(const GoldenCase& c, DType dtype, double rtol, double atol) {
  const auto& cfg = c.config();
  const auto enc = build(cfg, dtype);
  StateDict state;
  for (const std::string& name : c.names()) {
    if (name.rfind("param.", 0) == 0) state.insert(name.substr(6), c.tensor(name, dtype));
  }
  enc->load_state_dict(state, /*strict=*/true);

  Variable q(c.tensor("q", dtype), true);
  Variable k(c.tensor("k", dtype), true);
  Variable v(c.tensor("v", dtype), true);
  nn::AttentionCall call;
  call.scale = 1.0 / std::sqrt(static_cast<double>(cfg.at("head_dim").get<int64_t>()));
  call.causal = cfg.at("causal").get<bool>();
  call.query_offset = cfg.at("offset").get<int64_t>();
  if (c.has("key_padding_mask")) call.key_padding_mask = c.tensor("key_padding_mask", DType::kF32);
  const Variable out = enc->attend(q, k, v, call);
  out.backward(c.tensor("upstream", dtype));
  EXPECT_TRUE(allclose(out.data(), c.tensor("output", dtype), rtol, atol)) << "output";
  EXPECT_TRUE(allclose(q.grad(), c.tensor("grad.q", dtype), rtol, atol)) << "grad.q";
  EXPECT_TRUE(allclose(k.grad(), c.tensor("grad.k", dtype), rtol, atol)) << "grad.k";
  EXPECT_TRUE(allclose(v.grad(), c.tensor("grad.v", dtype), rtol, atol)) << "grad.v";
  for (const auto& [name, p] : enc->named_parameters()) {
    ASSERT_TRUE(c.has("grad." + name)) << name;
    EXPECT_TRUE(allclose(p.grad(), c.tensor("grad." + name, dtype), rtol, atol)) << name;
  }
}

class RelativeEncodingsGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(RelativeEncodingsGolden, DoubleMatchesTightly) {
  run_case(GoldenCase::load(GetParam()), DType::kF64, 1e-9, 1e-10);
}

TEST_P(RelativeEncodingsGolden, FloatMatchesToFloatPrecision) {
  run_case(GoldenCase::load(GetParam()), DType::kF32, 1e-4, 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Cases, RelativeEncodingsGolden,
                         ::testing::ValuesIn(GoldenCase::list("relative_encodings")),
                         rota::testing::GoldenTestName());

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
