// A fine-tuning recipe's model block over the pretrained run's: written fields win, the rest is
// inherited, inherited fields that do not apply are left out; load_recipe applies it.
#include <optional>
#include <string>
#include <vector>

#include <google/protobuf/text_format.h>
#include <gtest/gtest.h>

#include "recipes/loader.h"
#include "recipes/model_inheritance.h"

namespace rota::recipes {
namespace ROTA_TEST_FILE_NS {

Model model_of(const std::string& text) {
  Model model;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &model)) << text;
  return model;
}

// A pretrained masked LM as its run saved it (resolved: every field set).
const char* kPretrained = R"(
  kind: MASKED_LM width: 64 layers: 3 heads: 4 ffn_width: 256 dropout: 0.1
  tie_embeddings: true
  attention { linear { feature_map: RELU chunk_size: 16 } }
  position { lrpe { type: 2 p: HOUSEHOLDER learn_theta: true } }
  hybrid { every: 2 blocks: [0] attention { softmax {} } }
)";

TEST(ModelInheritance, WrittenFieldsWinTheRestIsInherited) {
  Recipe recipe;
  *recipe.mutable_model() = model_of(R"(
    kind: CLASSIFIER dropout: 0.3
    classifier { num_classes: 3 }
    attention { linear { chunk_size: 32 } }
    hybrid { blocks: [1, 2] }
  )");
  inherit_model(recipe, model_of(kPretrained));
  const Model& m = recipe.model();
  EXPECT_EQ(m.kind(), Model::CLASSIFIER);
  EXPECT_EQ(m.dropout(), 0.3);
  EXPECT_EQ(m.classifier().num_classes(), 3);
  EXPECT_EQ(m.width(), 64);
  EXPECT_EQ(m.layers(), 3);
  EXPECT_EQ(m.heads(), 4);
  EXPECT_EQ(m.ffn_width(), 256);
  // Sub-messages field by field.
  EXPECT_EQ(m.attention().linear().chunk_size(), 32);
  EXPECT_EQ(m.attention().linear().feature_map(), LinearAttention::RELU);
  EXPECT_TRUE(m.position().lrpe().learn_theta());
  // A written list replaces the inherited one.
  EXPECT_EQ(std::vector<int>(m.hybrid().blocks().begin(), m.hybrid().blocks().end()),
            (std::vector<int>{1, 2}));
  EXPECT_EQ(m.hybrid().every(), 2);
  // A language model's field that a classifier has no use for is not inherited.
  EXPECT_FALSE(m.has_tie_embeddings());
}

TEST(ModelInheritance, AWrittenOneofMemberSwitchesTheChoice) {
  Recipe recipe;
  *recipe.mutable_model() = model_of("position { rope {} }");
  inherit_model(recipe, model_of(kPretrained));
  EXPECT_TRUE(recipe.model().position().has_rope());
  EXPECT_FALSE(recipe.model().position().has_lrpe());
  EXPECT_EQ(recipe.model().kind(), Model::MASKED_LM);
  EXPECT_TRUE(recipe.model().has_tie_embeddings());  // applies to the masked LM it still is
}

TEST(ModelInheritance, LoadRecipeInheritsFromInitFromOnlyWithASource) {
  const std::string text = R"(
    version: 1
    model { kind: CLASSIFIER classifier { num_classes: 2 } }
    data { corpus: "sst-2" tokenizer { kind: BYTE } }
    train { steps: 10 }
    finetune { init_from: "runs/pretrained" strictness: PARTIAL }
  )";
  std::vector<std::string> asked;
  const PretrainedModel source = [&](const std::string& from) -> std::optional<Model> {
    asked.push_back(from);
    Model pretrained = model_of(kPretrained);
    pretrained.clear_hybrid();
    return pretrained;
  };
  const std::vector<std::string> overrides = {"model.dropout=0.2"};
  const Recipe inherited = load_recipe_text(text, "ft.txtpb", overrides, source);
  EXPECT_EQ(asked, std::vector<std::string>{"runs/pretrained"});
  EXPECT_EQ(inherited.model().width(), 64);
  EXPECT_EQ(inherited.model().layers(), 3);
  EXPECT_EQ(inherited.model().dropout(), 0.2);  // an override is written too
  EXPECT_EQ(inherited.model().kind(), Model::CLASSIFIER);
  // Without a source (or when the run cannot be read) the recipe's own block stands (it must
  // then choose a position itself).
  const std::vector<std::string> own_position = {"model.position={rope {}}"};
  const Recipe plain = load_recipe_text(text, "ft.txtpb", own_position);
  EXPECT_NE(plain.model().width(), 64);
  const Recipe unreadable =
      load_recipe_text(text, "ft.txtpb", own_position,
                       [](const std::string&) -> std::optional<Model> { return std::nullopt; });
  EXPECT_EQ(unreadable.model().width(), plain.model().width());
  EXPECT_THROW(load_recipe_text(text, "ft.txtpb"), RecipeError);
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::recipes
