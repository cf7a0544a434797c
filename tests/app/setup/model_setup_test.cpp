// Recipe fields reach the model: numerics (norm epsilon, sinusoid base), the typed position,
// the LLaMA-style block options (norm_kind, SwiGLU/GeGLU and their default width, bias), decay /
// group norm / output gate, gating and the delta rule.
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <variant>

#include <gtest/gtest.h>

#include "app/setup/model_setup.h"
#include "framework/autograd/grad_mode.h"
#include "models/language_models.h"
#include "models/memory_estimate.h"
#include "recipes/loader.h"
#include "recipes/recipe_error.h"
#include "recipes/resolve.h"

namespace rota::models {
namespace ROTA_TEST_FILE_NS {

constexpr char kRecipe[] = R"(version: 1
model { kind: CAUSAL_LM width: 16 layers: 1 heads: 2 ffn_width: 32 dropout: 0
        attention { linear {} } position { sinusoidal {} } }
data { corpus: "tinyshakespeare" tokenizer { kind: BYTE } sequence_length: 8 batch_size: 2 }
train { steps: 1 }
)";

ModelOptions options_with(const std::vector<std::string>& overrides) {
  return app::model_options_from_recipe(
      recipes::load_recipe_text(kRecipe, "fields.txtpb", overrides), 256);
}

// Logits of a model built from `options` with a fixed seed on fixed ids.
Tensor logits_of(const ModelOptions& options) {
  Generator init(5);
  CausalLm model(options, init, nullptr);
  model.eval();
  Tensor ids = Tensor::empty({1, 8}, DType::kI64);
  for (int64_t i = 0; i < 8; ++i) ids.data<int64_t>()[i] = (i * 37) % 256;
  NoGradGuard no_grad;
  return model.forward(ids).data().contiguous();
}

double max_abs_difference(const Tensor& a, const Tensor& b) {
  double m = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    m = std::max(m, std::abs(double(a.data<float>()[i]) - double(b.data<float>()[i])));
  }
  return m;
}

TEST(RecipeFields, NormEpsilonReachesEveryNorm) {
  EXPECT_EQ(options_with({}).norm_eps, 1e-5);
  const ModelOptions big = options_with({"model.norm_eps=0.5"});
  EXPECT_EQ(big.norm_eps, 0.5);
  EXPECT_EQ(big.attention.norm_eps, 0.5);
  // A huge epsilon visibly changes the outputs; the default one is the model's own default.
  EXPECT_GT(max_abs_difference(logits_of(options_with({})), logits_of(big)), 1e-3);
  EXPECT_EQ(max_abs_difference(logits_of(options_with({})),
                               logits_of(options_with({"model.norm_eps=1e-5"}))),
            0.0);
}

TEST(RecipeFields, SinusoidBaseReachesTheEmbedding) {
  EXPECT_EQ(std::get<nn::SinusoidalPosition>(options_with({}).position).base, 10000.0);
  const ModelOptions other = options_with({"model.position.sinusoidal.base=100"});
  EXPECT_EQ(std::get<nn::SinusoidalPosition>(other.position).base, 100.0);
  EXPECT_GT(max_abs_difference(logits_of(options_with({})), logits_of(other)), 1e-4);
}

TEST(RecipeFields, PositionBecomesTheTypedEncoding) {
  const ModelOptions frozen =
      options_with({"model.position={lrpe {type: 1 p: HOUSEHOLDER_FROZEN learn_theta: false}}"});
  const auto& lrpe = std::get<nn::LrpeOptions>(frozen.position);
  EXPECT_EQ(lrpe.core, backend::LrpeCore::kUnitary);
  EXPECT_EQ(lrpe.p, backend::LrpeP::kHouseholder);
  EXPECT_FALSE(lrpe.learn_householder);
  EXPECT_FALSE(lrpe.learn_theta);
  const auto learned = std::get<nn::LrpeOptions>(
      options_with({"model.position={lrpe {type: 2 p: HOUSEHOLDER theta_base: 500}}"}).position);
  EXPECT_EQ(learned.p, backend::LrpeP::kHouseholder);
  EXPECT_TRUE(learned.learn_householder);
  EXPECT_EQ(learned.theta_base, 500.0);
  const auto odd_even = std::get<nn::LrpeOptions>(
      options_with({"model.position={lrpe {type: 3 p: ODD_EVEN}}"}).position);
  EXPECT_EQ(odd_even.core, backend::LrpeCore::kPermutation);
  EXPECT_EQ(odd_even.p, backend::LrpeP::kOddEven);

  const auto rope = std::get<nn::RopePosition>(
      options_with({"model.position={rope {pairing: HALF base: 500}}"}).position);
  EXPECT_EQ(rope.pairing, backend::LrpePairing::kHalf);
  EXPECT_EQ(rope.base, 500.0);
  EXPECT_EQ(std::get<nn::RopePosition>(options_with({"model.position={rope {}}"}).position).pairing,
            backend::LrpePairing::kAdjacent);
  EXPECT_TRUE(std::holds_alternative<nn::PermuteFormerPosition>(
      options_with({"model.position={permute_former {}}"}).position));
  EXPECT_TRUE(
      std::holds_alternative<nn::NoPosition>(options_with({"model.position={none {}}"}).position));
  EXPECT_EQ(std::get<nn::LearnedPosition>(
                options_with({"model.position={learned_absolute {max_positions: 64}}"}).position)
                .max_positions,
            64);
}

std::set<std::string> parameter_names(const ModelOptions& options) {
  Generator init(5);
  CausalLm model(options, init, nullptr);
  std::set<std::string> out;
  for (const auto& [name, p] : model.named_parameters()) out.insert(name);
  return out;
}

TEST(RecipeFields, BlockOptionsDefaultToLayerNormGeluAndBiases) {
  const ModelOptions o = options_with({});
  EXPECT_EQ(o.norm_kind, nn::NormKind::kLayerNorm);
  EXPECT_TRUE(o.bias);
  EXPECT_EQ(o.activation, nn::Activation::kGelu);
  // Saying the defaults changes nothing, bit for bit.
  EXPECT_EQ(
      max_abs_difference(
          logits_of(o), logits_of(options_with({"model.norm_kind=LAYER_NORM", "model.bias=true"}))),
      0.0);
  const std::set<std::string> names = parameter_names(o);
  EXPECT_TRUE(names.count("encoder.blocks.0.ln1.bias"));
  EXPECT_TRUE(names.count("encoder.blocks.0.ffn.fc1.bias"));
  EXPECT_TRUE(names.count("encoder.final_norm.bias"));
}

TEST(RecipeFields, LlamaStyleBlockReachesTheModel) {
  const ModelOptions o =
      options_with({"model.norm_kind=RMS_NORM", "model.ffn_activation=SWIGLU", "model.bias=false"});
  EXPECT_EQ(o.norm_kind, nn::NormKind::kRmsNorm);
  EXPECT_EQ(o.activation, nn::Activation::kSwiglu);
  EXPECT_FALSE(o.bias);
  EXPECT_EQ(o.ffn_dim, 32);  // the recipe's explicit ffn_width
  const std::set<std::string> names = parameter_names(o);
  const std::string b = "encoder.blocks.0.";
  for (const std::string& name :
       {b + "ln1.weight", b + "ln2.weight", b + "ffn.gate_proj.weight", b + "ffn.up_proj.weight",
        b + "ffn.down_proj.weight", b + "attn.q_proj.weight", b + "attn.out_proj.weight",
        b + "attn.norm.weight", std::string("encoder.final_norm.weight")}) {
    EXPECT_TRUE(names.count(name)) << name;
  }
  for (const std::string& name : names) {
    // No bias anywhere in the blocks or the final norm (a causal LM has no head bias).
    EXPECT_EQ(name.find("bias"), std::string::npos) << name;
  }
  EXPECT_EQ(options_with({"model.ffn_activation=GEGLU"}).activation, nn::Activation::kGeglu);
  // And it trains: a finite loss with a gradient for every parameter.
  Generator init(3);
  CausalLm model(o, init, nullptr);
  Tensor ids = Tensor::empty({2, 8}, DType::kI64);
  for (int64_t i = 0; i < 16; ++i) ids.data<int64_t>()[i] = (i * 29) % 256;
  const Variable loss = model.loss(ids, ids);
  loss.backward();
  EXPECT_TRUE(std::isfinite(loss.item()));
  for (const auto& [name, p] : model.named_parameters()) {
    EXPECT_TRUE(p.grad().defined()) << name;
  }
}

TEST(RecipeFields, GroupedQueryAttentionPerPartBiasesAndRopeScalingReachTheModel) {
  const ModelOptions o = options_with(
      {"model.attention={softmax {}}", "model.heads=4", "model.kv_heads=2", "model.bias=false",
       "model.biases={qkv: true}",
       "model.position={rope {pairing: HALF base: 500 scaling {linear {factor: 4}}}}"});
  EXPECT_EQ(o.kv_heads, 2);
  EXPECT_TRUE(o.qkv_bias());
  EXPECT_FALSE(o.attention_out_bias());
  EXPECT_FALSE(o.ffn_bias());
  EXPECT_FALSE(o.norm_bias());
  const auto& rope = std::get<nn::RopePosition>(o.position);
  EXPECT_EQ(rope.scaling.kind, nn::RopeScaling::Kind::kLinear);
  EXPECT_EQ(rope.scaling.factor, 4.0);
  Generator init(5);
  CausalLm model(o, init, nullptr);
  const std::string b = "encoder.blocks.0.attn.";
  std::map<std::string, Shape> shapes;
  for (const auto& [name, p] : model.named_parameters()) shapes[name] = p.data().shape();
  const int64_t kv_width = 2 * (o.dim / o.heads);
  EXPECT_EQ(shapes.at(b + "k_proj.weight"), (Shape{kv_width, o.dim}));
  EXPECT_EQ(shapes.at(b + "v_proj.bias"), (Shape{kv_width}));
  EXPECT_EQ(shapes.at(b + "q_proj.weight"), (Shape{o.dim, o.dim}));
  EXPECT_TRUE(shapes.count(b + "q_proj.bias"));
  EXPECT_FALSE(shapes.count(b + "out_proj.bias"));
  EXPECT_FALSE(shapes.count("encoder.blocks.0.ffn.fc1.bias"));
  EXPECT_FALSE(shapes.count("encoder.blocks.0.ln1.bias"));
  // The analytic count (memory estimates, logs) agrees with the built model.
  EXPECT_EQ(models::parameter_count(o), static_cast<double>(model.num_parameters()));
  // θ is the linear rescaling of base 500 (the frozen buffer the checkpoint stores).
  const StateDict state = model.state_dict();
  const std::vector<double> theta = state.at(b + "rope.theta").to_double_vector();
  const int64_t d = o.dim / o.heads;
  for (size_t j = 0; j < theta.size(); ++j) {
    EXPECT_FLOAT_EQ(theta[j], std::pow(500.0, -2.0 * static_cast<double>(j) / d) / 4);
  }
}

TEST(RecipeFields, KvHeadsApplyToAHybridsSoftmaxBlocksOnly) {
  // Linear blocks keep a key/value head per query head; the softmax block shares them.
  const ModelOptions o =
      options_with({"model.heads=4", "model.layers=2", "model.kv_heads=2",
                    "model.hybrid={every: 2 attention {softmax {}} position {rope {}}}"});
  Generator init(5);
  CausalLm model(o, init, nullptr);
  std::map<std::string, Shape> shapes;
  for (const auto& [name, p] : model.named_parameters()) shapes[name] = p.data().shape();
  EXPECT_EQ(shapes.at("encoder.blocks.0.attn.k_proj.weight"), (Shape{o.dim, o.dim}));  // linear
  EXPECT_EQ(shapes.at("encoder.blocks.1.attn.k_proj.weight"), (Shape{o.dim / 2, o.dim}));
  EXPECT_EQ(models::parameter_count(o), static_cast<double>(model.num_parameters()));
}

TEST(RecipeFields, GatedFfnDefaultsToTheParameterMatchedWidth) {
  constexpr char kNoFfnWidth[] = R"(version: 1
model { kind: CAUSAL_LM width: 48 layers: 1 heads: 2 dropout: 0
        attention { linear {} } position { none {} } }
data { corpus: "tinyshakespeare" tokenizer { kind: BYTE } sequence_length: 8 batch_size: 2 }
train { steps: 1 }
)";
  auto width_of = [&](const std::vector<std::string>& overrides) {
    return app::model_options_from_recipe(
               recipes::load_recipe_text(kNoFfnWidth, "ffn.txtpb", overrides), 256)
        .ffn_dim;
  };
  EXPECT_EQ(width_of({}), 4 * 48);
  EXPECT_EQ(width_of({"model.ffn_activation=SWIGLU"}), 128);                    // 8/3 · 48 = 128
  EXPECT_EQ(width_of({"model.ffn_activation=GEGLU", "model.width=256"}), 688);  // ⌈682.7⌉₈
  EXPECT_EQ(width_of({"model.ffn_activation=SWIGLU", "model.width=50"}), 136);  // ⌈133.3⌉₈
  // The resolved recipe (a run's recipe.txtpb) pins the same value.
  const std::vector<std::string> swiglu = {"model.ffn_activation=SWIGLU"};
  recipes::Recipe resolved = recipes::load_recipe_text(kNoFfnWidth, "ffn.txtpb", swiglu);
  recipes::resolve_recipe(resolved);
  EXPECT_EQ(resolved.model().ffn_width(), 128);
}

TEST(RecipeFields, BadBlockOptionsNameTheField) {
  for (const std::string& override :
       {std::string("model.norm_kind=BATCH_NORM"), std::string("model.ffn_activation=SWISH"),
        std::string("model.bias=maybe")}) {
    try {
      options_with({override});
      ADD_FAILURE() << override << " was accepted";
    } catch (const recipes::RecipeError& error) {
      const std::string field = override.substr(0, override.find('='));
      EXPECT_NE(std::string(error.what()).find(field), std::string::npos) << error.what();
    }
  }
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::models

namespace rota::models {
namespace ROTA_TEST_FILE_NS {

TEST(RecipeFields, DecayGroupNormAndOutputGateReachTheAttention) {
  const ModelOptions plain = options_with({});
  EXPECT_EQ(plain.attention.decay.schedule, nn::DecaySchedule::kNone);
  EXPECT_EQ(plain.attention.output_gate, nn::OutputGate::kNone);
  const ModelOptions retnet = options_with({"model.attention.linear.decay.schedule=RETNET",
                                            "model.attention.linear.normalization=GROUP_NORM",
                                            "model.attention.linear.output_gate=SWISH_GATE"});
  EXPECT_EQ(retnet.attention.decay.schedule, nn::DecaySchedule::kRetNet);
  EXPECT_EQ(retnet.attention.norm, nn::LinearAttentionNorm::kGroupNorm);
  EXPECT_EQ(retnet.attention.output_gate, nn::OutputGate::kSwish);
  const ModelOptions lrpe_d = options_with({"model.attention.linear.decay={schedule: TRANSNORMER}",
                                            "model.attention.linear.output_gate=SIGMOID_GATE"});
  EXPECT_EQ(lrpe_d.attention.decay.schedule, nn::DecaySchedule::kTransNormer);
  EXPECT_EQ(lrpe_d.attention.output_gate, nn::OutputGate::kSigmoid);
  // `decay {}` alone selects the RetNet schedule, and the decay changes what the model computes.
  const ModelOptions bare = options_with({"model.attention.linear.decay={}"});
  EXPECT_EQ(bare.attention.decay.schedule, nn::DecaySchedule::kRetNet);
  EXPECT_GT(max_abs_difference(logits_of(plain), logits_of(bare)), 1e-5);
}

TEST(RecipeFields, GatingAndTheDeltaRuleReachTheAttention) {
  const ModelOptions gla =
      options_with({"model.attention.linear.gating={gla {rank: 4 temperature: 8}}"});
  EXPECT_EQ(gla.attention.state_gate.gating, nn::StateGating::kGla);
  EXPECT_EQ(gla.attention.state_gate.gla_rank, 4);
  EXPECT_EQ(gla.attention.state_gate.gla_temperature, 8.0);
  EXPECT_EQ(gla.attention.state_gate.rule, nn::UpdateRule::kAdditive);
  const ModelOptions gated_delta = options_with(
      {"model.attention.linear.gating={ssd {}}", "model.attention.linear.update_rule=DELTA"});
  EXPECT_EQ(gated_delta.attention.state_gate.gating, nn::StateGating::kSsd);
  EXPECT_EQ(gated_delta.attention.state_gate.rule, nn::UpdateRule::kDelta);
  const ModelOptions learnable =
      options_with({"model.attention.linear.decay={schedule: TRANSNORMER learnable: true}"});
  EXPECT_TRUE(learnable.attention.decay.learnable);
  // Each builds and computes something else than the plain model.
  const Tensor plain = logits_of(options_with({}));
  for (const ModelOptions& o : {gla, gated_delta, learnable}) {
    EXPECT_GT(max_abs_difference(plain, logits_of(o)), 1e-5);
  }
}

TEST(RecipeFields, DecayIsRefusedWhereItIsUndefinedNamingTheField) {
  auto error_of = [](const std::vector<std::string>& overrides) -> std::string {
    try {
      options_with(overrides);
    } catch (const std::exception& e) {  // recipes::RecipeError
      return e.what();
    }
    return "";
  };
  const std::string masked = error_of({"model.kind=MASKED_LM", "model.attention.linear.decay={}"});
  EXPECT_NE(masked.find("model.attention.linear.decay"), std::string::npos) << masked;
  EXPECT_NE(masked.find("CAUSAL_LM models only"), std::string::npos) << masked;
  const std::string permute =
      error_of({"model.position={permute_former {}}", "model.attention.linear.decay={}"});
  EXPECT_NE(permute.find("model.attention.linear.decay"), std::string::npos) << permute;
  EXPECT_NE(permute.find("its own per-head decay"), std::string::npos) << permute;
  const std::string gla_delta = error_of(
      {"model.attention.linear.gating={gla {}}", "model.attention.linear.update_rule=DELTA"});
  EXPECT_NE(gla_delta.find("model.attention.linear.gating.gla"), std::string::npos) << gla_delta;
  const std::string with_decay =
      error_of({"model.attention.linear.gating={ssd {}}", "model.attention.linear.decay={}"});
  EXPECT_NE(with_decay.find("model.attention.linear.gating"), std::string::npos) << with_decay;
  EXPECT_NE(with_decay.find("fixed decay"), std::string::npos) << with_decay;
  const std::string denominator = error_of({"model.attention.linear.update_rule=DELTA",
                                            "model.attention.linear.normalization=DENOMINATOR"});
  EXPECT_NE(denominator.find("model.attention.linear.update_rule"), std::string::npos)
      << denominator;
  const std::string masked_gate =
      error_of({"model.kind=MASKED_LM", "model.attention.linear.gating={ssd {}}"});
  EXPECT_NE(masked_gate.find("CAUSAL_LM models only"), std::string::npos) << masked_gate;
  const std::string learnable_denominator =
      error_of({"model.attention.linear.decay={learnable: true}",
                "model.attention.linear.normalization=DENOMINATOR"});
  EXPECT_NE(learnable_denominator.find("model.attention.linear.decay.learnable"), std::string::npos)
      << learnable_denominator;
  const std::string empty = error_of({"model.attention.linear.gating={}"});
  EXPECT_NE(empty.find("choose one gate"), std::string::npos) << empty;
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::models
