// `--set` overrides: scalars, enums, nesting, oneofs, repeated fields, every bad path and value.
#include <gtest/gtest.h>

#include "recipes/loader.h"
#include "recipes/overrides.h"
#include "recipes/recipe.pb.h"
#include "recipes/recipe_error.h"
#include "tests/recipes/recipe_test_util.h"

namespace rota::recipes {
namespace ROTA_TEST_FILE_NS {

/// The RecipeError message of applying `text` to `message`, or "" when it applies.
std::string override_error(google::protobuf::Message& message, const std::string& text) {
  try {
    apply_override(message, text);
  } catch (const RecipeError& error) {
    return error.what();
  }
  return "";
}

TEST(RecipeOverride, ScalarsOfEveryType) {
  Recipe recipe;
  EXPECT_EQ(apply_override(recipe, "model.layers=6"), "model.layers");
  EXPECT_EQ(recipe.model().layers(), 6);
  apply_override(recipe, "train.steps=123456789012");  // int64
  EXPECT_EQ(recipe.train().steps(), 123456789012);
  apply_override(recipe, "train.seed=18446744073709551615");  // uint64 max
  EXPECT_EQ(recipe.train().seed(), 18446744073709551615ull);
  apply_override(recipe, "schedule.lr=3e-4");
  EXPECT_EQ(recipe.schedule().lr(), 3e-4);
  apply_override(recipe, "model.dropout=+0.25");
  EXPECT_EQ(recipe.model().dropout(), 0.25);
  apply_override(recipe, "model.final_norm=false");
  EXPECT_TRUE(recipe.model().has_final_norm());
  EXPECT_FALSE(recipe.model().final_norm());
  apply_override(recipe, "model.tie_embeddings=1");
  EXPECT_TRUE(recipe.model().tie_embeddings());
  apply_override(recipe, "description=two words here");
  EXPECT_EQ(recipe.description(), "two words here");
}

TEST(RecipeOverride, WhitespaceAroundPathAndValueIsIgnored) {
  Recipe recipe;
  EXPECT_EQ(apply_override(recipe, "  model.width =  96 "), "model.width");
  EXPECT_EQ(recipe.model().width(), 96);
}

TEST(RecipeOverride, WholeNumberInExponentFormIsAnInteger) {
  Recipe recipe;
  apply_override(recipe, "train.steps=1e4");
  EXPECT_EQ(recipe.train().steps(), 10000);
}

TEST(RecipeOverride, QuotedStringsUseCEscapes) {
  Recipe recipe;
  apply_override(recipe, R"(train.sample.prompt="a\n\"b\", c")");
  EXPECT_EQ(recipe.train().sample().prompt(), "a\n\"b\", c");
  apply_override(recipe, "train.sample.prompt='single'");
  EXPECT_EQ(recipe.train().sample().prompt(), "single");
}

TEST(RecipeOverride, EmptyStringValue) {
  Recipe recipe;
  apply_override(recipe, "name=");
  EXPECT_TRUE(recipe.has_name());
  EXPECT_EQ(recipe.name(), "");
}

TEST(RecipeOverride, EnumsByNameCaseInsensitive) {
  Recipe recipe;
  apply_override(recipe, "model.kind=MASKED_LM");
  EXPECT_EQ(recipe.model().kind(), Model::MASKED_LM);
  apply_override(recipe, "model.kind=classifier");
  EXPECT_EQ(recipe.model().kind(), Model::CLASSIFIER);
  apply_override(recipe, "model.ffn_activation=gelu-tanh");
  EXPECT_EQ(recipe.model().ffn_activation(), Model::GELU_TANH);
}

TEST(RecipeOverride, NestedMessagesAreCreated) {
  Recipe recipe;
  apply_override(recipe, "model.position.lrpe.p=ODD_EVEN");
  ASSERT_TRUE(recipe.model().position().has_lrpe());
  EXPECT_EQ(recipe.model().position().lrpe().p(), Lrpe::ODD_EVEN);
}

TEST(RecipeOverride, SettingInsideAOneofMemberSelectsIt) {
  Recipe recipe;
  apply_override(recipe, "model.position.lrpe.type=3");
  apply_override(recipe, "model.position.rope.base=500");
  EXPECT_TRUE(recipe.model().position().has_rope());
  EXPECT_FALSE(recipe.model().position().has_lrpe());  // the other member is cleared
  EXPECT_EQ(recipe.model().position().rope().base(), 500);
}

TEST(RecipeOverride, ScalarOneofMembersSwitch) {
  Recipe recipe;
  apply_override(recipe, "data.corpus=wikitext-2");
  apply_override(recipe, "data.text_dir=/data/mine");
  EXPECT_FALSE(recipe.data().has_corpus());
  EXPECT_EQ(recipe.data().text_dir(), "/data/mine");
  apply_override(recipe, "train.steps=10");
  apply_override(recipe, "train.epochs=2.5");
  EXPECT_FALSE(recipe.train().has_steps());
  EXPECT_EQ(recipe.train().epochs(), 2.5);
}

TEST(RecipeOverride, EmptyBracesSelectAnEmptyMember) {
  Recipe recipe;
  apply_override(recipe, "model.position.lrpe.type=2");
  apply_override(recipe, "model.position.none={}");
  EXPECT_TRUE(recipe.model().position().has_none());
  EXPECT_FALSE(recipe.model().position().has_lrpe());
}

TEST(RecipeOverride, MessageTextReplacesTheWholeMessage) {
  Recipe recipe;
  apply_override(recipe, "model.position={lrpe {type: 2 learn_theta: false} add_sinusoidal: true}");
  apply_override(recipe, "model.position={lrpe {type: 3}}");
  const Position& position = recipe.model().position();
  ASSERT_TRUE(position.has_lrpe());
  EXPECT_EQ(position.lrpe().type(), 3);
  EXPECT_FALSE(position.lrpe().has_learn_theta());  // replaced, not merged
  EXPECT_FALSE(position.has_add_sinusoidal());
}

TEST(RecipeOverride, RepeatedFieldsReplaceAndAppend) {
  Recipe recipe;
  apply_override(recipe, "finetune.freeze=[embeddings, blocks.0.]");
  ASSERT_EQ(recipe.finetune().freeze_size(), 2);
  EXPECT_EQ(recipe.finetune().freeze(0), "embeddings");
  EXPECT_EQ(recipe.finetune().freeze(1), "blocks.0.");
  apply_override(recipe, "finetune.freeze+=blocks.1.");
  ASSERT_EQ(recipe.finetune().freeze_size(), 3);
  EXPECT_EQ(recipe.finetune().freeze(2), "blocks.1.");
  apply_override(recipe, "finetune.freeze=[encoder]");  // replaces, not appends
  ASSERT_EQ(recipe.finetune().freeze_size(), 1);
  EXPECT_EQ(recipe.finetune().freeze(0), "encoder");
  apply_override(recipe, "finetune.freeze=[]");
  EXPECT_EQ(recipe.finetune().freeze_size(), 0);
  apply_override(recipe, R"(finetune.freeze=["a,b", 'c]'])");  // quoted commas and brackets
  ASSERT_EQ(recipe.finetune().freeze_size(), 2);
  EXPECT_EQ(recipe.finetune().freeze(0), "a,b");
  EXPECT_EQ(recipe.finetune().freeze(1), "c]");
}

TEST(RecipeOverride, RepeatedNumbersAndMessages) {
  Ablation ablation;
  apply_override(ablation, "seeds=[1, 2, 3]");
  EXPECT_EQ(ablation.seeds_size(), 3);
  EXPECT_EQ(ablation.seeds(2), 3u);
  apply_override(ablation, "context_multipliers+=8");
  ASSERT_EQ(ablation.context_multipliers_size(), 1);
  EXPECT_EQ(ablation.context_multipliers(0), 8);
  apply_override(ablation, R"(variant=[{name: "a" overrides: "model.layers=2"}, {name: "b"}])");
  ASSERT_EQ(ablation.variant_size(), 2);
  EXPECT_EQ(ablation.variant(0).overrides(0), "model.layers=2");
  EXPECT_EQ(ablation.variant(1).name(), "b");
  apply_override(ablation, R"(variant+={name: "c"})");
  ASSERT_EQ(ablation.variant_size(), 3);
  EXPECT_EQ(ablation.variant(2).name(), "c");
}

TEST(RecipeOverride, LastOverrideWins) {
  Recipe recipe;
  apply_override(recipe, "model.layers=2");
  apply_override(recipe, "model.layers=8");
  EXPECT_EQ(recipe.model().layers(), 8);
}

/// A bad override and the exact message it must produce.
struct BadOverride {
  const char* name;
  std::string text;
  std::string expected;
};

std::ostream& operator<<(std::ostream& out, const BadOverride& bad) {
  return out << bad.name;
}

class RecipeBadOverride : public ::testing::TestWithParam<BadOverride> {};

TEST_P(RecipeBadOverride, IsRefusedNamingTheOverrideAndPath) {
  Recipe recipe;
  EXPECT_EQ(override_error(recipe, GetParam().text), GetParam().expected);
}

const BadOverride kBadOverrides[] = {
    {"no_equals", "model.layers", "--set model.layers: expected PATH=VALUE (or PATH+=VALUE)"},
    {"no_path", "=3", "--set =3: missing field path before '='"},
    {"malformed_path", "model..layers=3",
     "--set model..layers=3: malformed field path 'model..layers'"},
    {"indexing", "finetune.freeze[0]=x",
     "--set finetune.freeze[0]=x: indexing into repeated fields is not supported; replace the "
     "whole list with PATH=[...] or append with PATH+=VALUE"},
    {"unknown_field", "model.lyers=3",
     "--set model.lyers=3: model: unknown field 'lyers' (did you mean 'layers'?); fields here: "
     "kind, width, layers, heads, ffn_width, ffn_activation, norm_kind, bias, norm_placement, "
     "final_norm, norm_eps, dropout, embedding_scale, tie_embeddings, init_scheme, init_std, "
     "attention, position, classifier, hybrid, kv_heads, biases, vocab_size"},
    {"unknown_top_level", "optim.lr=3",
     "--set optim.lr=3: unknown field 'optim' (did you mean 'optimizer'?); fields here: version, "
     "name, description, model, data, optimizer, schedule, train, finetune, linearize"},
    {"through_a_scalar", "model.width.x=3",
     "--set model.width.x=3: model.width: is a int32, not a message, so it has no field 'x'"},
    {"through_a_repeated", "finetune.freeze.x=3",
     "--set finetune.freeze.x=3: finetune.freeze: is a string, not a message, so it has no field "
     "'x'"},
    {"not_an_integer", "model.layers=two",
     "--set model.layers=two: model.layers: 'two' is not an integer (a int32 is expected)"},
    {"fraction_for_integer", "model.layers=1.5",
     "--set model.layers=1.5: model.layers: '1.5' is not an integer (a int32 is expected)"},
    {"int32_range", "model.layers=3000000000",
     "--set model.layers=3000000000: model.layers: '3000000000' is out of range for int32 "
     "[-2147483648, 2147483647]"},
    {"int32_range_exponent", "model.layers=1e10",
     "--set model.layers=1e10: model.layers: '1e10' is out of range for int32 [-2147483648, "
     "2147483647]"},
    {"negative_unsigned", "train.seed=-1",
     "--set train.seed=-1: train.seed: '-1' is negative; a uint64 must be >= 0"},
    {"not_a_number", "schedule.lr=fast",
     "--set schedule.lr=fast: schedule.lr: 'fast' is not a finite number"},
    {"infinite", "schedule.lr=inf",
     "--set schedule.lr=inf: schedule.lr: 'inf' is not a finite number"},
    {"trailing_garbage", "schedule.lr=1e-3x",
     "--set schedule.lr=1e-3x: schedule.lr: '1e-3x' is not a finite number"},
    {"missing_value", "schedule.lr=", "--set schedule.lr=: schedule.lr: missing value"},
    {"bad_bool", "model.final_norm=yes",
     "--set model.final_norm=yes: model.final_norm: 'yes' is not a bool (true or false)"},
    {"bad_enum", "model.kind=CASUAL_LM",
     "--set model.kind=CASUAL_LM: model.kind: unknown value 'CASUAL_LM' (did you mean "
     "'CAUSAL_LM'?); one of CAUSAL_LM, MASKED_LM, CLASSIFIER"},
    {"repeated_without_brackets", "finetune.freeze=encoder",
     "--set finetune.freeze=encoder: finetune.freeze: is a repeated field; replace it with "
     "finetune.freeze=[a, b] or append with finetune.freeze+=a"},
    {"append_to_singular", "model.layers+=1",
     "--set model.layers+=1: model.layers: '+=' appends to repeated fields, and this field is not "
     "repeated; use '='"},
    {"empty_list_element", "finetune.freeze=[a,,b]",
     "--set finetune.freeze=[a,,b]: finetune.freeze: empty element in the list"},
    {"unbalanced_list", "finetune.freeze=[\"a]",
     "--set finetune.freeze=[\"a]: finetune.freeze: unterminated quote or bracket in the list"},
    {"message_without_braces", "model.position=rope",
     "--set model.position=rope: model.position: is a message; give its text in braces, e.g. "
     "model.position={}"},
    {"bad_message_text", "model.position={lrpe {typ: 2}}",
     "--set model.position={lrpe {typ: 2}}: model.position: column 7 of the braces: lrpe.typ: "
     "unknown field (did you mean 'type'?); lrpe has type, pairing, p, learn_theta, theta_base"},
    {"malformed_quoted", "name=\"abc", "--set name=\"abc: name: malformed quoted string \"abc"},
};

INSTANTIATE_TEST_SUITE_P(All, RecipeBadOverride, ::testing::ValuesIn(kBadOverrides),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(RecipeOverride, BadElementInARepeatedNumberList) {
  Ablation ablation;
  EXPECT_EQ(override_error(ablation, "context_multipliers=[1, x]"),
            "--set context_multipliers=[1, x]: context_multipliers: 'x' is not an integer (a "
            "int32 is expected)");
}

TEST(RecipeOverride, RepeatedMessageCannotBeAMiddleStep) {
  Ablation ablation;
  EXPECT_EQ(override_error(ablation, "variant.name=x"),
            "--set variant.name=x: variant: is a repeated message; replace it whole with "
            "variant=[{...}, ...] or append with variant+={...}");
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::recipes

namespace rota::recipes {
namespace ROTA_TEST_FILE_NS {

TEST(RecipeUnset, ClearsASectionAScalarAndAOneofMember) {
  Recipe recipe = load_recipe_text(rota::recipes::testing::kBaseRecipe, "t");
  recipe.mutable_finetune()->set_init_from("runs/x");
  recipe.mutable_model()->set_layers(7);
  EXPECT_EQ(apply_override(recipe, "!finetune"), "finetune");
  EXPECT_FALSE(recipe.has_finetune());
  EXPECT_EQ(apply_override(recipe, "!model.layers"), "model.layers");
  EXPECT_FALSE(recipe.model().has_layers());
  EXPECT_EQ(recipe.model().layers(), Model().layers());  // the schema default again
  ASSERT_TRUE(recipe.model().position().has_lrpe());
  apply_override(recipe, "!model.position.lrpe");
  EXPECT_EQ(recipe.model().position().encoding_case(), Position::ENCODING_NOT_SET);
  // A path inside an absent section is checked against the schema, then nothing to clear.
  EXPECT_EQ(apply_override(recipe, "!finetune.init_from"), "finetune.init_from");
  EXPECT_FALSE(recipe.has_finetune());
}

TEST(RecipeUnset, UnknownFieldsAreNamedAsTheUnsetOption) {
  Recipe recipe = load_recipe_text(rota::recipes::testing::kBaseRecipe, "t");
  try {
    apply_override(recipe, "!finetun");
    FAIL() << "accepted";
  } catch (const RecipeError& error) {
    EXPECT_EQ(std::string(error.what())
                  .rfind("--unset finetun: unknown field 'finetun' (did you "
                         "mean 'finetune'?)",
                         0),
              0u)
        << error.what();
  }
  EXPECT_THROW(apply_override(recipe, "!model.width.x"), RecipeError);
  EXPECT_THROW(apply_override(recipe, "!finetune.nosuch"), RecipeError);
  EXPECT_THROW(apply_override(recipe, "!"), RecipeError);
}

TEST(RecipeUnset, OrderWithSetMattersAndRecipesRevalidate) {
  const std::vector<std::string> unset_then_set = {"!train", "train.steps=5"};
  EXPECT_EQ(
      load_recipe_text(rota::recipes::testing::kBaseRecipe, "t", unset_then_set).train().steps(),
      5);
  // Unsetting the length leaves a recipe without steps or epochs: refused, naming --unset.
  const std::vector<std::string> unset_length = {"!train.steps"};
  const std::string error =
      rota::recipes::testing::load_error(rota::recipes::testing::kBaseRecipe, unset_length);
  EXPECT_NE(error.find("train: set exactly one of steps or epochs"), std::string::npos) << error;
  EXPECT_NE(error.find("--unset train.steps"), std::string::npos) << error;
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::recipes
