// Initialisation schemes (models/init_scheme.h): each parameter kind starts from the stated
// distribution — moments, bounds and tail shape over large tensors, expectations written from
// the schemes' formulas, not from parameter_inits.
#include <cmath>
#include <map>
#include <string>

#include <gtest/gtest.h>

#include "models/language_models.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

using models::InitScheme;
using models::ModelOptions;

constexpr int64_t kWidth = 256;
constexpr int64_t kFfn = 1024;
constexpr int64_t kLayers = 2;
constexpr int64_t kVocab = 2048;
constexpr int64_t kClasses = 64;
constexpr double kSigma = 0.05;  // init_std of NORMAL and GPT2 (not the 0.02 default)

// What a parameter's values should look like.
struct Expected {
  enum class Family { kNormal, kUniform, kZero } family;
  double spread = 0.0;  // the std (normal) or the bound b of U(−b, b)
};
Expected normal(double std) {
  return {Expected::Family::kNormal, std};
}
Expected uniform(double bound) {
  return {Expected::Family::kUniform, bound};
}
Expected zero() {
  return {Expected::Family::kZero, 0.0};
}

// The parameter kinds of a model, by the last two parts of their names.
enum class Kind {
  kEmbedding,
  kAttentionInputWeight,
  kAttentionInputBias,
  kAttentionOutputWeight,
  kAttentionOutputBias,
  kFfnFirstWeight,
  kFfnFirstBias,
  kFfnSecondWeight,
  kFfnSecondBias,
  kLmHead,
  kClassifierWeight,
  kClassifierBias,
  kOther
};

Kind kind_of(const std::string& name) {
  const auto ends = [&](const std::string& suffix) {
    return name.size() >= suffix.size() &&
           name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  if (ends("embed.weight")) return Kind::kEmbedding;  // tokens and learned positions
  for (const char* p : {"q_proj.", "k_proj.", "v_proj.", "attn.gate_proj."}) {
    if (ends(std::string(p) + "weight")) return Kind::kAttentionInputWeight;
    if (ends(std::string(p) + "bias")) return Kind::kAttentionInputBias;
  }
  if (ends("out_proj.weight")) return Kind::kAttentionOutputWeight;
  if (ends("out_proj.bias")) return Kind::kAttentionOutputBias;
  // fc1, or a gated FFN's gate_proj and up_proj; fc2 or down_proj.
  for (const char* p : {"fc1.", "ffn.gate_proj.", "up_proj."}) {
    if (ends(std::string(p) + "weight")) return Kind::kFfnFirstWeight;
    if (ends(std::string(p) + "bias")) return Kind::kFfnFirstBias;
  }
  for (const char* p : {"fc2.", "down_proj."}) {
    if (ends(std::string(p) + "weight")) return Kind::kFfnSecondWeight;
    if (ends(std::string(p) + "bias")) return Kind::kFfnSecondBias;
  }
  if (name == "lm_head.weight") return Kind::kLmHead;
  if (name == "classifier.weight") return Kind::kClassifierWeight;
  if (name == "classifier.bias") return Kind::kClassifierBias;
  return Kind::kOther;
}

bool is_bias(Kind kind) {
  return kind == Kind::kAttentionInputBias || kind == Kind::kAttentionOutputBias ||
         kind == Kind::kFfnFirstBias || kind == Kind::kFfnSecondBias ||
         kind == Kind::kClassifierBias;
}

// The schemes' formulas (docs/recipes.md, "Initialisation").
Expected expected(InitScheme scheme, Kind kind) {
  const double e = kWidth, f = kFfn;
  const double xavier_square = std::sqrt(6.0 / (e + e));
  switch (scheme) {
    case InitScheme::kNormal:
    case InitScheme::kGpt2: {
      const double residual =
          scheme == InitScheme::kGpt2 ? kSigma / std::sqrt(2.0 * kLayers) : kSigma;
      if (is_bias(kind)) return zero();
      if (kind == Kind::kAttentionOutputWeight || kind == Kind::kFfnSecondWeight) {
        return normal(residual);
      }
      return normal(kSigma);
    }
    case InitScheme::kWidthScaled:
      if (is_bias(kind)) return zero();
      return normal(1.0 / std::sqrt(kind == Kind::kFfnSecondWeight ? f : e));
    case InitScheme::kPyTorch:
      switch (kind) {
        case Kind::kEmbedding:
          return normal(1.0 / std::sqrt(e));
        case Kind::kFfnSecondWeight:
        case Kind::kFfnSecondBias:
          return uniform(1.0 / std::sqrt(f));
        default:
          return uniform(1.0 / std::sqrt(e));
      }
    case InitScheme::kFairseq:
      switch (kind) {
        case Kind::kEmbedding:
        case Kind::kLmHead:
          return normal(1.0 / std::sqrt(e));
        case Kind::kAttentionInputWeight:
          return uniform(xavier_square / std::sqrt(2.0));
        case Kind::kAttentionOutputWeight:
          return uniform(xavier_square);
        case Kind::kAttentionOutputBias:
          return zero();
        case Kind::kFfnSecondWeight:
        case Kind::kFfnSecondBias:
          return uniform(1.0 / std::sqrt(f));
        default:  // q/k/v bias, fc1, classifier: nn.Linear's default
          return uniform(1.0 / std::sqrt(e));
      }
  }
  return zero();
}

// Checks values against `want`: mean, standard deviation (6 standard errors), and for large
// tensors the family: a uniform never exceeds its bound and reaches close to it, its excess
// kurtosis is −1.2; a normal's is 0.
void expect_distribution(const Tensor& values, const Expected& want, const std::string& name) {
  const Tensor v = values.to(DType::kF64).contiguous();
  const double* x = v.data<double>();
  const int64_t n = v.numel();
  double sum = 0, max_abs = 0;
  for (int64_t i = 0; i < n; ++i) {
    sum += x[i];
    max_abs = std::max(max_abs, std::abs(x[i]));
  }
  if (want.family == Expected::Family::kZero) {
    EXPECT_EQ(max_abs, 0.0) << name << ": expected zeros";
    return;
  }
  const double mean = sum / static_cast<double>(n);
  double m2 = 0, m4 = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double d = x[i] - mean;
    m2 += d * d;
    m4 += d * d * d * d;
  }
  m2 /= static_cast<double>(n);
  m4 /= static_cast<double>(n);
  const double std = std::sqrt(m2);
  const double want_std =
      want.family == Expected::Family::kNormal ? want.spread : want.spread / std::sqrt(3.0);
  const double root_n = std::sqrt(static_cast<double>(n));
  EXPECT_NEAR(mean, 0.0, 6.0 * want_std / root_n) << name;
  EXPECT_NEAR(std / want_std, 1.0, 6.0 * 0.71 / root_n) << name << ": std " << std;
  if (want.family == Expected::Family::kUniform) {
    EXPECT_LE(max_abs, want.spread) << name << ": beyond the uniform bound";
    if (n >= 4096) {
      EXPECT_GE(max_abs, 0.99 * want.spread) << name;
    }
  }
  if (n >= 4096) {
    const double excess_kurtosis = m4 / (m2 * m2) - 3.0;
    const double want_kurtosis = want.family == Expected::Family::kNormal ? 0.0 : -1.2;
    EXPECT_NEAR(excess_kurtosis, want_kurtosis, 6.0 * std::sqrt(24.0 / static_cast<double>(n)))
        << name;
  }
}

ModelOptions options(InitScheme scheme, models::ModelKind kind) {
  ModelOptions o;
  o.kind = kind;
  o.vocab_size = kVocab;
  o.dim = kWidth;
  o.layers = kLayers;
  o.heads = 4;
  o.ffn_dim = kFfn;
  o.tie_embeddings = false;  // so the LM head has its own weight
  o.position = nn::LearnedPosition{512};
  o.init_scheme = scheme;
  o.init_std = kSigma;
  o.num_classes = kClasses;
  return o;
}

// Every kind a model has, checked; returns the kinds seen.
std::map<Kind, int> check_model(const nn::Module& model, InitScheme scheme) {
  std::map<Kind, int> seen;
  for (const auto& [name, parameter] : model.named_parameters()) {
    const Kind kind = kind_of(name);
    if (kind == Kind::kOther) continue;  // norms, LRPE: their own initialisation
    ++seen[kind];
    expect_distribution(parameter.data(), expected(scheme, kind),
                        std::string(models::init_scheme_name(scheme)) + " " + name);
  }
  return seen;
}

class InitSchemes : public ::testing::TestWithParam<InitScheme> {};

TEST_P(InitSchemes, EveryParameterKindHasItsDistribution) {
  Generator gen(7);
  ModelOptions lm_options = options(GetParam(), models::ModelKind::kCausalLm);
  lm_options.attention.output_gate = nn::OutputGate::kSwish;  // gate_proj reads the block input
  const models::CausalLm lm(lm_options, gen, nullptr);
  const std::map<Kind, int> lm_kinds = check_model(lm, GetParam());
  EXPECT_EQ(lm_kinds.at(Kind::kEmbedding), 2);                       // tokens and learned positions
  EXPECT_EQ(lm_kinds.at(Kind::kAttentionInputWeight), 4 * kLayers);  // q, k, v, gate
  EXPECT_EQ(lm_kinds.at(Kind::kAttentionOutputWeight), kLayers);
  EXPECT_EQ(lm_kinds.at(Kind::kFfnSecondBias), kLayers);
  EXPECT_EQ(lm_kinds.at(Kind::kLmHead), 1);

  const models::Classifier classifier(options(GetParam(), models::ModelKind::kClassifier), gen,
                                      nullptr);
  const std::map<Kind, int> classifier_kinds = check_model(classifier, GetParam());
  EXPECT_EQ(classifier_kinds.at(Kind::kClassifierWeight), 1);
  EXPECT_EQ(classifier_kinds.at(Kind::kClassifierBias), 1);
}

INSTANTIATE_TEST_SUITE_P(Schemes, InitSchemes,
                         ::testing::Values(InitScheme::kNormal, InitScheme::kGpt2,
                                           InitScheme::kWidthScaled, InitScheme::kPyTorch,
                                           InitScheme::kFairseq),
                         [](const ::testing::TestParamInfo<InitScheme>& info) {
                           return std::string(models::init_scheme_name(info.param));
                         });

// A gated (SwiGLU) FFN: gate_proj and up_proj start as fc1 does, down_proj as fc2 (the GPT-2
// residual scaling included), in every scheme; without biases there are none to check.
TEST_P(InitSchemes, GatedFeedForwardProjectionsFollowTheScheme) {
  for (bool bias : {true, false}) {
    Generator gen(9);
    ModelOptions o = options(GetParam(), models::ModelKind::kCausalLm);
    o.activation = nn::Activation::kSwiglu;
    o.norm_kind = nn::NormKind::kRmsNorm;
    o.bias = bias;
    const models::CausalLm lm(o, gen, nullptr);
    const std::map<Kind, int> kinds = check_model(lm, GetParam());
    EXPECT_EQ(kinds.at(Kind::kFfnFirstWeight), 2 * kLayers);  // gate_proj, up_proj
    EXPECT_EQ(kinds.at(Kind::kFfnSecondWeight), kLayers);     // down_proj
    EXPECT_EQ(kinds.at(Kind::kAttentionInputWeight), 3 * kLayers);
    if (bias) {
      EXPECT_EQ(kinds.at(Kind::kFfnFirstBias), 2 * kLayers);
      EXPECT_EQ(kinds.at(Kind::kFfnSecondBias), kLayers);
    } else {
      for (Kind b : {Kind::kFfnFirstBias, Kind::kFfnSecondBias, Kind::kAttentionInputBias,
                     Kind::kAttentionOutputBias}) {
        EXPECT_EQ(kinds.count(b), 0u);
      }
    }
  }
}

// A softmax-attention model takes the same projections' inits (q, k, v and out_proj).
TEST(InitSchemes, SoftmaxAttentionProjectionsFollowTheScheme) {
  Generator gen(8);
  ModelOptions o = options(InitScheme::kGpt2, models::ModelKind::kCausalLm);
  o.attention_family = models::AttentionFamily::kSoftmax;
  o.position = nn::RopePosition{};
  const models::CausalLm lm(o, gen, nullptr);
  const std::map<Kind, int> kinds = check_model(lm, InitScheme::kGpt2);
  EXPECT_EQ(kinds.at(Kind::kAttentionInputWeight), 3 * kLayers);
  EXPECT_EQ(kinds.at(Kind::kAttentionOutputWeight), kLayers);
}

// A hybrid stack: the softmax block and the gated linear block each follow the scheme (GPT2's
// residual scaling by the whole stack's depth included).
TEST_P(InitSchemes, HybridStackBlocksFollowTheScheme) {
  Generator gen(9);
  ModelOptions o = options(GetParam(), models::ModelKind::kCausalLm);
  o.attention.output_gate = nn::OutputGate::kSwish;  // block 0: linear with a gate
  models::HybridOptions h;                           // block 1: softmax with RoPE
  h.blocks = {1};
  h.attention_family = models::AttentionFamily::kSoftmax;
  h.position = nn::RopePosition{};
  o.hybrid = h;
  const models::CausalLm lm(o, gen, nullptr);
  const std::map<Kind, int> kinds = check_model(lm, GetParam());
  EXPECT_EQ(kinds.at(Kind::kAttentionInputWeight), 4 + 3);  // q, k, v, gate; q, k, v
  EXPECT_EQ(kinds.at(Kind::kAttentionOutputWeight), kLayers);
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
