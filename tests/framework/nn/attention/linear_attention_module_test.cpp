// LinearAttention layer: recurrent generation == full causal pass, gradients of every
// parameter, padding masks, denominator validation, decay and output-gate options.
#include <cmath>
#include <map>
#include <string>

#include <gtest/gtest.h>

#include "framework/nn/attention/linear_attention.h"
#include "tests/support/allclose.h"
#include "tests/support/gradcheck.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

using nn::LinearAttention;
using nn::LinearAttentionNorm;
using nn::LinearAttentionOptions;
using testing::allclose;

LinearAttentionOptions small_options(bool causal, LinearAttentionNorm norm, bool with_lrpe) {
  LinearAttentionOptions o;
  o.dim = 6;
  o.heads = 2;
  o.causal = causal;
  o.norm = norm;
  o.chunk_size = 2;
  o.dtype = DType::kF64;
  if (with_lrpe) o.position = nn::LrpeOptions{};
  return o;
}

struct StepCase {
  std::string name;
  LinearAttentionNorm norm;
  std::optional<nn::LrpeOptions> lrpe;
  nn::DecaySchedule decay = nn::DecaySchedule::kNone;
  nn::OutputGate gate = nn::OutputGate::kNone;
  nn::StateGateOptions state_gate = {};
  bool learnable_decay = false;
  nn::FeatureMap feature_map = nn::FeatureMap::kOnePlusElu;
};

nn::StateGateOptions gating(nn::StateGating kind, nn::UpdateRule rule = nn::UpdateRule::kAdditive) {
  nn::StateGateOptions g;
  g.gating = kind;
  g.rule = rule;
  g.gla_rank = 3;
  return g;
}

class RecurrentStep : public ::testing::TestWithParam<StepCase> {};

TEST_P(RecurrentStep, TokenByTokenEqualsFullCausalPass) {
  const StepCase& c = GetParam();
  Generator gen(1);
  LinearAttentionOptions o = small_options(true, c.norm, false);
  if (c.lrpe) o.position = *c.lrpe;
  o.decay.schedule = c.decay;
  o.decay.learnable = c.learnable_decay;
  o.output_gate = c.gate;
  o.state_gate = c.state_gate;
  o.feature_map = c.feature_map;
  LinearAttention layer(o, gen);
  const int64_t b = 2, n = 7;
  const Tensor x = randn({b, n, o.dim}, gen, 0, 1, DType::kF64);
  const Tensor full = layer.forward(Variable(x)).data();
  auto state = layer.initial_state(b);
  for (int64_t t = 0; t < n; ++t) {
    const Tensor y = layer.step(x.slice(1, t, t + 1).squeeze(1), state);
    EXPECT_TRUE(allclose(y, full.slice(1, t, t + 1).squeeze(1), 1e-10, 1e-10)) << "t=" << t;
  }
  EXPECT_EQ(state.position, n);
}

nn::LrpeOptions lrpe_with(backend::LrpeCore core, backend::LrpeP p) {
  nn::LrpeOptions l;
  l.core = core;
  l.p = p;
  return l;
}

INSTANTIATE_TEST_SUITE_P(
    Variants, RecurrentStep,
    ::testing::Values(
        StepCase{"NoPELayerNorm", LinearAttentionNorm::kLayerNorm, std::nullopt},
        StepCase{"Type2HouseholderLayerNorm", LinearAttentionNorm::kLayerNorm,
                 lrpe_with(backend::LrpeCore::kOrthogonal, backend::LrpeP::kHouseholder)},
        StepCase{"Type1OddEvenRmsNorm", LinearAttentionNorm::kRmsNorm,
                 lrpe_with(backend::LrpeCore::kUnitary, backend::LrpeP::kOddEven)},
        StepCase{"Type3IdentityDenominator", LinearAttentionNorm::kDenominator,
                 lrpe_with(backend::LrpeCore::kPermutation, backend::LrpeP::kIdentity)},
        StepCase{"NoPEDenominator", LinearAttentionNorm::kDenominator, std::nullopt},
        StepCase{"RetNetGroupNormSwishGate", LinearAttentionNorm::kGroupNorm,
                 lrpe_with(backend::LrpeCore::kOrthogonal, backend::LrpeP::kIdentity),
                 nn::DecaySchedule::kRetNet, nn::OutputGate::kSwish},
        StepCase{"TransNormerDecayDenominatorSigmoidGate", LinearAttentionNorm::kDenominator,
                 std::nullopt, nn::DecaySchedule::kTransNormer, nn::OutputGate::kSigmoid},
        StepCase{"LearnableRetNetDecay",
                 LinearAttentionNorm::kLayerNorm,
                 lrpe_with(backend::LrpeCore::kUnitary, backend::LrpeP::kHouseholder),
                 nn::DecaySchedule::kRetNet,
                 nn::OutputGate::kNone,
                 {},
                 true},
        StepCase{"GlaType1", LinearAttentionNorm::kRmsNorm,
                 lrpe_with(backend::LrpeCore::kUnitary, backend::LrpeP::kIdentity),
                 nn::DecaySchedule::kNone, nn::OutputGate::kSwish, gating(nn::StateGating::kGla)},
        StepCase{"Ssd", LinearAttentionNorm::kGroupNorm, std::nullopt, nn::DecaySchedule::kNone,
                 nn::OutputGate::kNone, gating(nn::StateGating::kSsd)},
        StepCase{"DeltaNet", LinearAttentionNorm::kLayerNorm, std::nullopt,
                 nn::DecaySchedule::kNone, nn::OutputGate::kNone,
                 gating(nn::StateGating::kNone, nn::UpdateRule::kDelta)},
        StepCase{"GatedDeltaNetLrpe", LinearAttentionNorm::kRmsNorm,
                 lrpe_with(backend::LrpeCore::kOrthogonal, backend::LrpeP::kHouseholder),
                 nn::DecaySchedule::kNone, nn::OutputGate::kSwish,
                 gating(nn::StateGating::kSsd, nn::UpdateRule::kDelta)},
        StepCase{"HedgehogLayerNorm",
                 LinearAttentionNorm::kLayerNorm,
                 std::nullopt,
                 nn::DecaySchedule::kNone,
                 nn::OutputGate::kNone,
                 {},
                 false,
                 nn::FeatureMap::kHedgehog},
        StepCase{"HedgehogDenominatorTransNormerDecay",
                 LinearAttentionNorm::kDenominator,
                 std::nullopt,
                 nn::DecaySchedule::kTransNormer,
                 nn::OutputGate::kNone,
                 {},
                 false,
                 nn::FeatureMap::kHedgehog},
        StepCase{"HedgehogGla", LinearAttentionNorm::kRmsNorm, std::nullopt,
                 nn::DecaySchedule::kNone, nn::OutputGate::kSwish, gating(nn::StateGating::kGla),
                 false, nn::FeatureMap::kHedgehog}),
    [](const ::testing::TestParamInfo<StepCase>& info) { return info.param.name; });

struct GradCase {
  std::string name;
  bool causal;
  LinearAttentionNorm norm;
  bool lrpe;
  nn::DecaySchedule decay = nn::DecaySchedule::kNone;
  nn::OutputGate gate = nn::OutputGate::kNone;
  nn::StateGateOptions state_gate = {};
  bool learnable_decay = false;
  nn::FeatureMap feature_map = nn::FeatureMap::kOnePlusElu;
};

class LayerGradient : public ::testing::TestWithParam<GradCase> {};

TEST_P(LayerGradient, InputsAndEveryParameter) {
  const GradCase& c = GetParam();
  Generator gen(2);
  LinearAttentionOptions o = small_options(c.causal, c.norm, c.lrpe);
  o.decay.schedule = c.decay;
  o.decay.learnable = c.learnable_decay;
  o.output_gate = c.gate;
  o.state_gate = c.state_gate;
  o.feature_map = c.feature_map;
  LinearAttention layer(o, gen);
  Variable x(randn({2, 5, 6}, gen, 0, 1, DType::kF64), true);
  const Tensor mask = c.causal ? Tensor() : tensor_from({1, 1, 1, 1, 0, 1, 1, 1, 1, 1}, {2, 5});
  std::vector<Variable> leaves = {x};
  for (const auto& [name, p] : layer.named_parameters()) leaves.push_back(p);
  testing::GradcheckOptions options;
  EXPECT_TRUE(
      testing::gradcheck_variables([&] { return layer.forward(x, mask); }, leaves, options));
}

INSTANTIATE_TEST_SUITE_P(
    Variants, LayerGradient,
    ::testing::Values(
        GradCase{"CausalLrpeLayerNorm", true, LinearAttentionNorm::kLayerNorm, true},
        GradCase{"BidirectionalLrpeRmsNorm", false, LinearAttentionNorm::kRmsNorm, true},
        GradCase{"CausalDenominator", true, LinearAttentionNorm::kDenominator, false},
        GradCase{"BidirectionalDenominatorMasked", false, LinearAttentionNorm::kDenominator, false},
        GradCase{"CausalRetNetGroupNormSwishGate", true, LinearAttentionNorm::kGroupNorm, true,
                 nn::DecaySchedule::kRetNet, nn::OutputGate::kSwish},
        GradCase{"BidirectionalGroupNormSigmoidGate", false, LinearAttentionNorm::kGroupNorm, false,
                 nn::DecaySchedule::kNone, nn::OutputGate::kSigmoid},
        GradCase{"LearnableTransNormerDecay",
                 true,
                 LinearAttentionNorm::kLayerNorm,
                 true,
                 nn::DecaySchedule::kTransNormer,
                 nn::OutputGate::kNone,
                 {},
                 true},
        GradCase{"Gla", true, LinearAttentionNorm::kLayerNorm, true, nn::DecaySchedule::kNone,
                 nn::OutputGate::kNone, gating(nn::StateGating::kGla)},
        GradCase{"Ssd", true, LinearAttentionNorm::kGroupNorm, false, nn::DecaySchedule::kNone,
                 nn::OutputGate::kSwish, gating(nn::StateGating::kSsd)},
        GradCase{"DeltaNet", true, LinearAttentionNorm::kLayerNorm, true, nn::DecaySchedule::kNone,
                 nn::OutputGate::kNone, gating(nn::StateGating::kNone, nn::UpdateRule::kDelta)},
        GradCase{"GatedDeltaNet", true, LinearAttentionNorm::kRmsNorm, false,
                 nn::DecaySchedule::kNone, nn::OutputGate::kNone,
                 gating(nn::StateGating::kSsd, nn::UpdateRule::kDelta)},
        GradCase{"CausalHedgehogLayerNorm",
                 true,
                 LinearAttentionNorm::kLayerNorm,
                 false,
                 nn::DecaySchedule::kNone,
                 nn::OutputGate::kNone,
                 {},
                 false,
                 nn::FeatureMap::kHedgehog},
        GradCase{"BidirectionalHedgehogDenominatorMasked",
                 false,
                 LinearAttentionNorm::kDenominator,
                 false,
                 nn::DecaySchedule::kNone,
                 nn::OutputGate::kNone,
                 {},
                 false,
                 nn::FeatureMap::kHedgehog},
        GradCase{"HedgehogGatedDeltaNet", true, LinearAttentionNorm::kRmsNorm, false,
                 nn::DecaySchedule::kNone, nn::OutputGate::kNone,
                 gating(nn::StateGating::kSsd, nn::UpdateRule::kDelta), false,
                 nn::FeatureMap::kHedgehog}),
    [](const ::testing::TestParamInfo<GradCase>& info) { return info.param.name; });

TEST(PermuteFormerLayer, RecurrentEqualsFullAndGradientsCheck) {
  Generator gen(7);
  LinearAttentionOptions o = small_options(true, LinearAttentionNorm::kDenominator, false);
  o.position = nn::PermuteFormerPosition{};
  LinearAttention causal(o, gen);
  const Tensor x = randn({2, 9, 6}, gen, 0, 1, DType::kF64);
  const Tensor full = causal.forward(Variable(x)).data();
  auto state = causal.initial_state(2);
  for (int64_t t = 0; t < 9; ++t) {
    EXPECT_TRUE(allclose(causal.step(x.slice(1, t, t + 1).squeeze(1), state),
                         full.slice(1, t, t + 1).squeeze(1), 1e-10, 1e-10));
  }
  for (bool is_causal : {true, false}) {
    o.causal = is_causal;
    LinearAttention layer(o, gen);
    Variable xv(randn({2, 5, 6}, gen, 0, 1, DType::kF64), true);
    std::vector<Variable> leaves = {xv};
    for (const auto& [name, p] : layer.named_parameters()) leaves.push_back(p);
    EXPECT_TRUE(testing::gradcheck_variables([&] { return layer.forward(xv); }, leaves));
  }
}

TEST(LinearAttentionLayer, DecayWeightsPairsByDistanceAsTheNaiveSum) {
  // o_s = Σ_{t≤s} γ_h^(s−t) (q̃_s·k̃_t) v_t per head, written out here as the plain loop over
  // pairs: identity feature map, no position, no norm (the denominator's numerator and
  // denominator both follow the same weights, so the ratio is checked).
  for (const nn::DecaySchedule schedule :
       {nn::DecaySchedule::kRetNet, nn::DecaySchedule::kTransNormer}) {
    Generator gen(11);
    LinearAttentionOptions o = small_options(true, LinearAttentionNorm::kDenominator, false);
    o.feature_map = nn::FeatureMap::kExp;  // positive features for the denominator
    o.decay.schedule = schedule;
    o.decay.layer = 1;
    o.decay.layers = 3;
    const LinearAttention layer(o, gen);
    const std::vector<double> gamma = nn::state_decay_rates(o.decay, o.heads);
    const int64_t b = 1, n = 9, e = o.dim, h = o.heads, d = e / h;
    const Tensor x = randn({b, n, e}, gen, 0, 1, DType::kF64);
    const Tensor out = layer.forward(Variable(x)).data();
    // Undo out_proj: compare the pre-projection heads through the same projection instead.
    auto project = [&](const std::string& name) {
      const StateDict sd = layer.state_dict();
      const std::vector<double> w = sd.at(name + ".weight").to_double_vector();
      const std::vector<double> bias = sd.at(name + ".bias").to_double_vector();
      return std::pair{w, bias};
    };
    const auto [wq, bq] = project("q_proj");
    const auto [wk, bk] = project("k_proj");
    const auto [wv, bv] = project("v_proj");
    const auto [wo, bo] = project("out_proj");
    const std::vector<double> xs = x.to_double_vector();
    auto linear = [&](const std::vector<double>& w, const std::vector<double>& bias, int64_t t) {
      std::vector<double> y(e);
      for (int64_t i = 0; i < e; ++i) {
        y[i] = bias[i];
        for (int64_t j = 0; j < e; ++j) y[i] += w[i * e + j] * xs[t * e + j];
      }
      return y;
    };
    std::vector<std::vector<double>> q(n), k(n), v(n);
    for (int64_t t = 0; t < n; ++t) {
      q[t] = linear(wq, bq, t);
      k[t] = linear(wk, bk, t);
      v[t] = linear(wv, bv, t);
      for (int64_t i = 0; i < e; ++i) {
        q[t][i] = std::exp(q[t][i]);
        k[t][i] = std::exp(k[t][i]);
      }
    }
    const std::vector<double> got = out.to_double_vector();
    for (int64_t s = 0; s < n; ++s) {
      std::vector<double> merged(e);
      for (int64_t hh = 0; hh < h; ++hh) {
        double den = 0;
        std::vector<double> num(d, 0.0);
        for (int64_t t = 0; t <= s; ++t) {
          double score = 0;
          for (int64_t c = 0; c < d; ++c) score += q[s][hh * d + c] * k[t][hh * d + c];
          score *= std::pow(gamma[hh], double(s - t));
          den += score;
          for (int64_t c = 0; c < d; ++c) num[c] += score * v[t][hh * d + c];
        }
        for (int64_t c = 0; c < d; ++c) merged[hh * d + c] = num[c] / den;
      }
      for (int64_t i = 0; i < e; ++i) {
        double y = bo[i];
        for (int64_t j = 0; j < e; ++j) y += wo[i * e + j] * merged[j];
        EXPECT_NEAR(got[s * e + i], y, 1e-11) << nn::decay_schedule_name(schedule) << " s=" << s;
      }
    }
  }
}

TEST(LinearAttentionLayer, StateGateMatricesAreWeightsAndItsVectorsBiases) {
  Generator gen(13);
  LinearAttentionOptions o = small_options(true, LinearAttentionNorm::kLayerNorm, false);
  o.state_gate = gating(nn::StateGating::kSsd, nn::UpdateRule::kDelta);
  LinearAttention ssd(o, gen);
  o.state_gate = gating(nn::StateGating::kGla);
  LinearAttention gla(o, gen);
  std::map<std::string, nn::ParameterRole> roles;
  for (LinearAttention* layer : {&ssd, &gla}) {
    for (const auto& [name, role] : nn::parameter_roles(*layer)) roles[name] = role;
  }
  EXPECT_EQ(roles.at("state_gate.dt_proj.weight"), nn::ParameterRole::kWeight);
  EXPECT_EQ(roles.at("state_gate.beta_proj.weight"), nn::ParameterRole::kWeight);
  EXPECT_EQ(roles.at("state_gate.gate_down.weight"), nn::ParameterRole::kWeight);
  EXPECT_EQ(roles.at("state_gate.gate_up.weight"), nn::ParameterRole::kWeight);
  EXPECT_EQ(roles.at("state_gate.gate_up.bias"), nn::ParameterRole::kBias);
  EXPECT_EQ(roles.at("state_gate.a_log"), nn::ParameterRole::kBias);
  EXPECT_EQ(roles.at("state_gate.dt_bias"), nn::ParameterRole::kBias);
}

TEST(LinearAttentionLayer, DecayRefusesBidirectionalLayersAndPermuteFormer) {
  Generator gen(12);
  LinearAttentionOptions o = small_options(false, LinearAttentionNorm::kLayerNorm, false);
  o.decay.schedule = nn::DecaySchedule::kRetNet;
  try {
    LinearAttention layer(o, gen);
    FAIL() << "a bidirectional layer with a decay was built";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("causal attention only"), std::string::npos) << e.what();
  }
  o.causal = true;
  o.position = nn::PermuteFormerPosition{};
  try {
    LinearAttention layer(o, gen);
    FAIL() << "permute_former with a second decay was built";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("its own per-head decay"), std::string::npos) << e.what();
  }
}

TEST(PermuteFormerLayer, BidirectionalRefusesLengthsBeyondFloatRange) {
  // Bidirectional PER weights pairs by γ^(s−t), which grows like γ^(−N) for t > s: finite
  // outputs at moderate length, a clear error where the weights would overflow.
  Generator gen(8);
  LinearAttentionOptions o = small_options(false, LinearAttentionNorm::kDenominator, false);
  o.position = nn::PermuteFormerPosition{};
  LinearAttention layer(o, gen);
  const Tensor x = randn({1, 120, 6}, gen, 0, 1, DType::kF64);
  for (double y : layer.forward(Variable(x)).data().to_double_vector()) {
    ASSERT_TRUE(std::isfinite(y));
  }
  const Tensor too_long = randn({1, 2000, 6}, gen, 0, 1, DType::kF64);
  EXPECT_THROW(layer.forward(Variable(too_long)), Error);
}

std::vector<std::string> child_names(const nn::Module& m) {
  std::vector<std::string> out;
  for (const auto& [name, child] : m.named_children()) out.push_back(name);
  return out;
}

/// The layer's `lrpe` child (throws if it has none).
const nn::Lrpe& lrpe_child(const LinearAttention& layer) {
  for (const auto& [name, child] : layer.named_children()) {
    if (name == "lrpe") return dynamic_cast<const nn::Lrpe&>(*child);
  }
  throw Error("no lrpe child");
}

TEST(LinearAttentionLayer, EveryTypedEncodingBuildsItsModule) {
  // Each encoding the layer accepts builds exactly its module: RoPE and LRPE an `lrpe` child
  // (RoPE: identity P, frozen θ, adjacent pairs), PermuteFormer its `permute_former` child,
  // none and the absolute encodings (the model adds them to the embeddings) nothing.
  Generator gen(9);
  const Tensor x = randn({1, 5, 6}, gen, 0, 1, DType::kF64);
  const std::vector<std::string> plain = {"q_proj", "k_proj", "v_proj", "out_proj", "norm"};
  auto with = [&](std::vector<std::string> names, const char* extra) {
    names.push_back(extra);
    return names;
  };
  struct Case {
    nn::PositionEncoding position;
    std::vector<std::string> children;
  };
  const std::vector<Case> cases = {
      {nn::NoPosition{}, plain},
      {nn::SinusoidalPosition{}, plain},
      {nn::LearnedPosition{}, plain},
      {nn::RopePosition{}, with(plain, "lrpe")},
      {nn::LrpeOptions{}, with(plain, "lrpe")},
      {nn::PermuteFormerPosition{}, with(plain, "permute_former")},
  };
  for (const Case& c : cases) {
    const std::string name = nn::position_encoding_name(c.position);
    LinearAttentionOptions o = small_options(true, LinearAttentionNorm::kLayerNorm, false);
    o.position = c.position;
    LinearAttention layer(o, gen);
    EXPECT_EQ(layer.forward(Variable(x)).shape(), (Shape{1, 5, 6})) << name;
    EXPECT_EQ(child_names(layer), c.children) << name;
  }

  LinearAttentionOptions o = small_options(true, LinearAttentionNorm::kLayerNorm, false);
  o.position = nn::RopePosition{};
  const LinearAttention rope(o, gen);
  const nn::Lrpe& rotation = lrpe_child(rope);
  EXPECT_EQ(rotation.options().core, backend::LrpeCore::kOrthogonal);
  EXPECT_EQ(rotation.options().p, backend::LrpeP::kIdentity);
  EXPECT_EQ(rotation.options().pairing, backend::LrpePairing::kAdjacent);
  EXPECT_EQ(rotation.options().head_dim, 3);
  EXPECT_FALSE(rotation.options().learn_theta);
  ASSERT_EQ(rope.named_parameters().size(), 11u);  // 4 × (weight, bias) + norm (2) + θ
  EXPECT_EQ(rope.named_parameters().back().first, "lrpe.theta");
  EXPECT_FALSE(rope.named_parameters().back().second.requires_grad());

  // RoPE's base and half pairing reach the rotation.
  o.position = nn::RopePosition{backend::LrpePairing::kHalf, 500.0};
  const LinearAttention half(o, gen);
  const nn::Lrpe& half_rotation = lrpe_child(half);
  EXPECT_EQ(half_rotation.options().pairing, backend::LrpePairing::kHalf);
  EXPECT_EQ(half_rotation.options().theta_base, 500.0);

  // LRPE options keep their Type × P × θ mode; head_dim and dtype come from the layer.
  nn::LrpeOptions frozen;
  frozen.core = backend::LrpeCore::kUnitary;
  frozen.learn_householder = false;
  frozen.head_dim = 99;
  frozen.dtype = DType::kF32;
  o.position = frozen;
  const LinearAttention lrpe(o, gen);
  EXPECT_EQ(lrpe.feature_dim(), 6);  // Type 1: F = 2D
  EXPECT_EQ(lrpe_child(lrpe).options().head_dim, 3);
  EXPECT_EQ(lrpe_child(lrpe).parameter("householder_v").dtype(), DType::kF64);
  EXPECT_FALSE(lrpe_child(lrpe).parameter("householder_v").requires_grad());
}

TEST(LinearAttentionLayer, RefusesSoftmaxOnlyEncodingsNamingThem) {
  Generator gen(10);
  const std::vector<nn::PositionEncoding> refused = {
      nn::AlibiPosition{}, nn::T5Position{}, nn::ShawPosition{}, nn::TransformerXlPosition{},
      nn::SkewPosition{}};
  for (const nn::PositionEncoding& position : refused) {
    const std::string name = nn::position_encoding_name(position);
    LinearAttentionOptions o = small_options(true, LinearAttentionNorm::kLayerNorm, false);
    o.position = position;
    try {
      LinearAttention layer(o, gen);
      FAIL() << name << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("positional encoding '" + name +
                                           "' applies to softmax attention only"),
                std::string::npos)
          << e.what();
    }
  }
}

TEST(LinearAttentionLayer, ChunkSizeDoesNotChangeTheOutput) {
  Generator gen(3);
  LinearAttentionOptions o = small_options(true, LinearAttentionNorm::kLayerNorm, true);
  LinearAttention a(o, gen);
  o.chunk_size = 5;
  Generator gen2(3);
  LinearAttention b(o, gen2);  // same seed → same parameters
  const Tensor x = randn({1, 11, 6}, gen, 0, 1, DType::kF64);
  EXPECT_TRUE(allclose(a.forward(Variable(x)).data(), b.forward(Variable(x)).data(), 1e-12, 1e-12));
}

TEST(LinearAttentionLayer, PaddingDoesNotLeakIntoRealPositions) {
  Generator gen(4);
  LinearAttention layer(small_options(false, LinearAttentionNorm::kLayerNorm, true), gen);
  Tensor x = randn({1, 6, 6}, gen, 0, 1, DType::kF64);
  const Tensor mask = tensor_from({1, 1, 1, 1, 0, 0}, {1, 6});
  const Tensor before = layer.forward(Variable(x), mask).data().slice(1, 0, 4);
  x.slice(1, 4, 6).copy_from(randn({1, 2, 6}, gen, 0, 50, DType::kF64));
  const Tensor after = layer.forward(Variable(x), mask).data().slice(1, 0, 4);
  EXPECT_TRUE(allclose(after, before, 1e-12, 1e-12));
}

TEST(LinearAttentionLayer, DenominatorRejectsSignedFeatures) {
  Generator gen(5);
  LinearAttentionOptions o = small_options(true, LinearAttentionNorm::kDenominator, true);
  try {
    LinearAttention layer(o, gen);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("denominator is ill-defined"), std::string::npos)
        << e.what();
  }
  o.position = nn::NoPosition{};
  o.feature_map = nn::FeatureMap::kIdentity;
  EXPECT_THROW(LinearAttention(o, gen), Error);
}

TEST(LinearAttentionLayer, ShapeErrorsAreClear) {
  Generator gen(6);
  LinearAttention layer(small_options(true, LinearAttentionNorm::kLayerNorm, false), gen);
  try {
    layer.forward(Variable(zeros({2, 3, 5}, DType::kF64)));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("LinearAttention: input [2,3,5] must be [B, N, 6]"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
