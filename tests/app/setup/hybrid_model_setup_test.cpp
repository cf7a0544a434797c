// Hybrid stacks from recipes: model.hybrid into typed per-block options, refusals, a trained step.
#include <cmath>
#include <string>
#include <variant>
#include <vector>

#include <gtest/gtest.h>

#include "app/setup/context_length.h"
#include "app/setup/model_setup.h"
#include "models/language_models.h"
#include "recipes/loader.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

using models::AttentionFamily;
using models::ModelOptions;

/// A small valid linear-attention recipe; `hybrid` goes inside `hybrid { }` (no hybrid when
/// empty), `position` inside the model's `position { }`.
std::string hybrid_recipe(const std::string& hybrid, const std::string& position = "lrpe {}",
                          int layers = 4) {
  return R"(version: 1
model {
  kind: CAUSAL_LM
  width: 16
  layers: )" +
         std::to_string(layers) + R"(
  heads: 2
  ffn_width: 24
  dropout: 0
  attention { linear {} }
  position { )" +
         position + " }\n" + (hybrid.empty() ? "" : "  hybrid { " + hybrid + " }\n") + R"(}
data {
  corpus: "tinyshakespeare"
  tokenizer { kind: CHAR }
  sequence_length: 12
  batch_size: 2
}
train { steps: 1 }
)";
}

ModelOptions options_of(const std::string& text) {
  return app::model_options_from_recipe(recipes::load_recipe_text(text, "hybrid.txtpb"), 13);
}

/// The error of loading and translating a recipe, or "" when both succeed.
std::string error_of(const std::string& text) {
  try {
    options_of(text);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(HybridFromRecipe, EveryKthAndExplicitBlocksBecomeTypedPerBlockOptions) {
  const ModelOptions o = options_of(
      hybrid_recipe("every: 3 blocks: 0 attention { softmax { window: 5 dropout: 0.1 } } "
                    "position { rope { pairing: HALF } }",
                    "lrpe {}", 6));
  ASSERT_TRUE(o.hybrid.has_value());
  EXPECT_EQ(o.hybrid->blocks, (std::vector<int64_t>{0, 2, 5}));
  EXPECT_EQ(o.hybrid->attention_family, AttentionFamily::kSoftmax);
  EXPECT_EQ(o.hybrid->softmax.window, 5);
  EXPECT_DOUBLE_EQ(o.hybrid->softmax.dropout, 0.1);
  const auto* rope = std::get_if<nn::RopePosition>(&o.hybrid->position);
  ASSERT_NE(rope, nullptr);
  EXPECT_EQ(rope->pairing, backend::LrpePairing::kHalf);
  EXPECT_EQ(o.attention_family, AttentionFamily::kLinear);
  EXPECT_TRUE(std::holds_alternative<nn::LrpeOptions>(o.position));
  for (int64_t i = 0; i < o.layers; ++i) {
    const bool selected = i == 0 || i == 2 || i == 5;
    EXPECT_EQ(models::block_options(o, i).attention_family,
              selected ? AttentionFamily::kSoftmax : AttentionFamily::kLinear)
        << i;
  }
}

TEST(HybridFromRecipe, AbsentPositionIsTheModelsWhenItApplies) {
  // RoPE applies to both families; absolute encodings are in the embeddings (nothing more here).
  ModelOptions o = options_of(hybrid_recipe("every: 2 attention { softmax {} }", "rope {}"));
  EXPECT_TRUE(std::holds_alternative<nn::RopePosition>(o.hybrid->position));
  o = options_of(hybrid_recipe("every: 2 attention { softmax {} }", "sinusoidal {}"));
  EXPECT_TRUE(std::holds_alternative<nn::SinusoidalPosition>(o.hybrid->position));
  Generator gen(1);
  const models::CausalLm lm(o, gen, nullptr);
  EXPECT_TRUE(lm.encoder().block(1).is_softmax());
  EXPECT_EQ(lm.encoder().block(1).relative_encoding(), nullptr);
}

TEST(HybridFromRecipe, LinearBlocksInASoftmaxStackGetTheirOwnSettings) {
  const std::string text = R"(version: 1
model {
  width: 16 layers: 3 heads: 2 dropout: 0
  attention { softmax {} }
  position { alibi {} }
  hybrid {
    blocks: 1
    attention { linear { normalization: GROUP_NORM output_gate: SWISH_GATE decay {} } }
    position { lrpe { type: 1 } }
  }
}
data { corpus: "tinyshakespeare" tokenizer { kind: CHAR } sequence_length: 12 batch_size: 2 }
train { steps: 1 }
)";
  const ModelOptions o = options_of(text);
  ASSERT_TRUE(o.hybrid.has_value());
  EXPECT_EQ(o.hybrid->attention_family, AttentionFamily::kLinear);
  EXPECT_EQ(o.hybrid->attention.norm, nn::LinearAttentionNorm::kGroupNorm);
  EXPECT_EQ(o.hybrid->attention.output_gate, nn::OutputGate::kSwish);
  EXPECT_EQ(o.hybrid->attention.decay.schedule, nn::DecaySchedule::kRetNet);
  EXPECT_TRUE(std::holds_alternative<nn::LrpeOptions>(o.hybrid->position));
  Generator gen(2);
  models::CausalLm lm(o, gen, nullptr);
  EXPECT_FALSE(lm.encoder().block(1).is_softmax());
  EXPECT_TRUE(lm.encoder().block(0).is_softmax());
  // A training step: the loss is finite and every parameter receives a gradient.
  Generator ids_gen(3);
  std::vector<double> ids(2 * 12);
  for (auto& id : ids) id = static_cast<double>(ids_gen.next_below(13));
  const Tensor x = tensor_from(ids, {2, 12}, DType::kI64);
  const Variable loss = lm.loss(x, x);
  EXPECT_TRUE(std::isfinite(loss.data().item()));
  loss.backward();
  for (const auto& [name, p] : lm.named_parameters()) {
    if (!p.requires_grad()) continue;
    EXPECT_TRUE(p.grad().defined()) << name;
  }
}

TEST(HybridFromRecipe, RefusalsNameTheField) {
  struct Case {
    std::string hybrid, position;
    int layers;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"blocks: 4 attention { softmax {} }", "rope {}", 4, "model.hybrid.blocks[0]: block 4"},
      {"blocks: -1 attention { softmax {} }", "rope {}", 4, "model.hybrid.blocks[0]: block -1"},
      {"blocks: 1 blocks: 1 attention { softmax {} }", "rope {}", 4,
       "model.hybrid.blocks[1]: block 1 is listed twice"},
      {"every: 1 attention { softmax {} }", "rope {}", 4, "model.hybrid.every: must be >= 2"},
      {"every: 5 attention { softmax {} }", "rope {}", 4,
       "model.hybrid.every: every 5 selects "
       "no block"},
      {"every: 2 blocks: 0 blocks: 2 attention { softmax {} }", "rope {}", 4,
       "model.hybrid: selects every block"},
      {"attention { softmax {} }", "rope {}", 4, "model.hybrid: selects no block"},
      {"every: 2", "rope {}", 4, "model.hybrid.attention: required"},
      {"blocks: 0 attention { softmax {} }", "rope {}", 1,
       "model.hybrid: a hybrid stack mixes "
       "blocks, and this model has 1"},
      // LRPE does not apply to softmax blocks: absent position, and set explicitly.
      {"every: 2 attention { softmax {} }", "lrpe {}", 4, "model.hybrid.position: absent"},
      {"every: 2 attention { softmax {} } position { lrpe {} }", "rope {}", 4,
       "model.hybrid.position.lrpe"},
      {"every: 2 attention { linear {} } position { alibi {} }", "rope {}", 4,
       "model.hybrid.position.alibi"},
      {"every: 2 attention { softmax {} } position { sinusoidal {} }", "rope {}", 4,
       "model.hybrid.position: absolute encodings"},
      {"every: 2 attention { softmax {} } position { t5 {} }", "rope {}", 4,
       "model.hybrid.position.t5"},
      {"every: 2 attention { softmax {} } position { rope {} add_sinusoidal: true }", "rope {}", 4,
       "model.hybrid.position.add_sinusoidal: does not apply"},
      {"every: 2 attention { softmax { window: 0 } }", "rope {}", 4,
       "model.hybrid.attention.softmax.window: must be >= 1 (got 0)"},
      {"every: 2 attention { softmax { streaming {} } }", "rope {}", 4,
       "model.hybrid.attention.softmax.streaming"},
  };
  for (const Case& c : cases) {
    const std::string error = error_of(hybrid_recipe(c.hybrid, c.position, c.layers));
    EXPECT_NE(error.find(c.expected), std::string::npos)
        << "hybrid { " << c.hybrid << " } position { " << c.position << " } layers " << c.layers
        << ": expected '" << c.expected << "' in:\n"
        << error;
  }
}

TEST(HybridFromRecipe, WindowIsForCausalModelsOnly) {
  std::string text = hybrid_recipe("every: 2 attention { softmax { window: 4 } }", "rope {}");
  text.replace(text.find("CAUSAL_LM"), 9, "MASKED_LM");
  EXPECT_NE(error_of(text).find("model.hybrid.attention.softmax.window: does not apply"),
            std::string::npos)
      << error_of(text);
}

TEST(HybridFromRecipe, ResolvedRecipeKeepsTheHybridAsWritten) {
  const recipes::Recipe r = recipes::load_recipe_text(
      hybrid_recipe("every: 2 attention { softmax {} }", "rope {}"), "hybrid.txtpb");
  ASSERT_TRUE(r.model().has_hybrid());
  EXPECT_FALSE(r.model().hybrid().has_position());  // absent stays absent (the model's)
  EXPECT_TRUE(r.model().hybrid().attention().softmax().has_scale());  // derived 1/√D
  EXPECT_FALSE(r.model().attention().linear().has_decay());
  const recipes::Recipe plain =
      recipes::load_recipe_text(hybrid_recipe("", "rope {}"), "plain.txtpb");
  EXPECT_FALSE(plain.model().has_hybrid());  // resolution does not materialise the section
}

TEST(HybridFromRecipe, EvaluatesAtOtherContextLengths) {
  const recipes::Recipe trained = recipes::load_recipe_text(
      hybrid_recipe("every: 2 attention { softmax { window: 5 } } position { rope {} }"),
      "hybrid.txtpb");
  const recipes::Recipe longer = app::recipe_at_context(trained, 40);
  ModelOptions o = app::model_options_from_recipe(longer, 13);
  o.dtype = DType::kF64;
  Generator gen(4);
  models::CausalLm lm(o, gen, nullptr);
  lm.eval();
  std::vector<double> ids(40);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<double>((i * 7) % 13);
  const Tensor x = tensor_from(ids, {1, 40}, DType::kI64);
  const Tensor losses = lm.token_losses(x, x);
  for (int64_t i = 0; i < 40; ++i) EXPECT_TRUE(std::isfinite(losses.at({0, i}))) << i;
  // A learned relative table in the hybrid's blocks cannot reach past its length: refused with
  // the hybrid's field.
  const recipes::Recipe skew = recipes::load_recipe_text(
      hybrid_recipe("every: 2 attention { softmax {} } position { skew { max_len: 12 } }"),
      "hybrid.txtpb");
  const std::string problem = app::context_problem(skew, 40);
  EXPECT_NE(problem.find("model.hybrid.position.skew.max_len"), std::string::npos) << problem;
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
