// Recipe fields reach the model: numerics (norm epsilon, sinusoid base), the typed position,
// the LLaMA-style block options (norm_kind, SwiGLU/GeGLU and their default width, bias).
#include <set>
#include <string>
#include <variant>

#include <gtest/gtest.h>

#include "app/setup/model_setup.h"
#include "framework/autograd/grad_mode.h"
#include "models/language_models.h"
#include "recipes/loader.h"
#include "recipes/recipe_error.h"
#include "recipes/resolve.h"

namespace rota::models {
namespace {

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

}  // namespace
}  // namespace rota::models
