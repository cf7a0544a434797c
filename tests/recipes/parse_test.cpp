// Recipe parsing: errors at file:line:col with the field path, versions, the upgrade hook.
#include <gtest/gtest.h>

#include "recipes/loader.h"
#include "recipes/text_parse.h"
#include "recipes/upgrade.h"
#include "tests/recipes/recipe_test_util.h"

namespace rota::recipes {
namespace ROTA_TEST_FILE_NS {

using testing::kBaseRecipe;
using testing::load_error;

TEST(RecipeParse, BaseRecipeLoadsWithItsValues) {
  const Recipe recipe = load_recipe_text(kBaseRecipe, "dir/test.txtpb");
  EXPECT_EQ(recipe.version(), 1);
  EXPECT_EQ(recipe.name(), "test");  // the file stem
  EXPECT_EQ(recipe.model().kind(), Model::CAUSAL_LM);
  EXPECT_EQ(recipe.model().width(), 64);
  EXPECT_EQ(recipe.model().layers(), 2);
  EXPECT_EQ(recipe.model().heads(), 4);
  ASSERT_TRUE(recipe.model().position().has_lrpe());
  EXPECT_EQ(recipe.model().position().lrpe().type(), 2);
  EXPECT_EQ(recipe.model().position().lrpe().p(), Lrpe::HOUSEHOLDER);
  EXPECT_EQ(recipe.data().corpus(), "tinyshakespeare");
  EXPECT_EQ(recipe.data().tokenizer().kind(), Tokenizer::CHAR);
  EXPECT_EQ(recipe.train().steps(), 100);
}

TEST(RecipeParse, ExplicitNameIsKept) {
  const Recipe recipe = load_recipe_text(std::string(kBaseRecipe) + "name: \"mine\"\n", "x.txtpb");
  EXPECT_EQ(recipe.name(), "mine");
}

TEST(RecipeParse, SyntaxErrorCarriesFileLineColumnAndPath) {
  // Line 4, column 10: a value is missing before '}'.
  const std::string text = "version: 1\nmodel {\n  position {\n    lrpe { type: }\n  }\n}\n";
  EXPECT_EQ(load_error(text),
            "test.txtpb:4:18: model.position.lrpe.type: Expected integer, got: }");
}

TEST(RecipeParse, UnknownFieldIsAnErrorWithSuggestion) {
  const std::string text = "version: 1\nmodel {\n  width: 64\n  lyers: 2\n}\n";
  const std::string error = load_error(text);
  EXPECT_EQ(error.rfind("test.txtpb:4:3: model.lyers: unknown field (did you mean 'layers'?); "
                        "model has kind, width, layers,",
                        0),
            0u)
      << error;
}

TEST(RecipeParse, UnknownTopLevelFieldNamesTheTopLevel) {
  const std::string error = load_error("version: 1\nmodle { width: 4 }\n");
  EXPECT_EQ(error.rfind("test.txtpb:2:1: modle: unknown field (did you mean 'model'?); the top "
                        "level has version, name,",
                        0),
            0u)
      << error;
}

TEST(RecipeParse, UnknownFieldWithoutCloseNameHasNoSuggestion) {
  const std::string error = load_error("version: 1\ntrain { zzzzzz: 3 }\n");
  EXPECT_NE(error.find("test.txtpb:2:9: train.zzzzzz: unknown field; train has steps,"),
            std::string::npos)
      << error;
  EXPECT_EQ(error.find("did you mean"), std::string::npos) << error;
}

TEST(RecipeParse, UnknownEnumValueListsTheValues) {
  const std::string error = load_error("version: 1\nmodel {\n  kind: CASUAL_LM\n}\n");
  EXPECT_EQ(error,
            "test.txtpb:3:9: model.kind: unknown value 'CASUAL_LM' (did you mean 'CAUSAL_LM'?); "
            "one of CAUSAL_LM, MASKED_LM, CLASSIFIER");
}

TEST(RecipeParse, VeryLongUnknownNamesAreLocatedAndShortened) {
  // Names far longer than any field (a hostile or corrupted file) give the usual located
  // error, with the name cut to its first 64 characters and its length.
  const std::string field(200000, 'x');
  const std::string field_error = load_error("version: 1\nmodel { " + field + ": 3 }\n");
  EXPECT_EQ(field_error.rfind("test.txtpb:2:9: model." + std::string(64, 'x') +
                                  "... (200000 characters): unknown field; model has kind,",
                              0),
            0u)
      << field_error.substr(0, 300);
  const std::string value(200000, 'Q');
  const std::string value_error = load_error("version: 1\nmodel { kind: " + value + " }\n");
  EXPECT_EQ(value_error, "test.txtpb:2:15: model.kind: unknown value '" + std::string(64, 'Q') +
                             "... (200000 characters)'; one of CAUSAL_LM, MASKED_LM, CLASSIFIER");
}

TEST(RecipeParse, NestingBeyondTheLimitIsRefusedBeforeParsing) {
  // 100,000 nested unknown messages overflowed protobuf's recursive skipping (SIGSEGV); past 32
  // levels the text is refused at the brace that opens level 33 (column 4·32 + 3), whatever
  // the version says.
  std::string deep;
  for (int i = 0; i < 100000; ++i) deep += "x { ";
  deep += std::string(100000, '}');
  for (const char* version : {"version: 1\n", "version: 99\n"}) {
    EXPECT_EQ(load_error(version + deep),
              "test.txtpb:2:131: nested more than 32 levels deep (a recipe nests a few levels; "
              "this is not one)");
  }
  // 32 levels are still parsed (and here refused for the unknown field, at its name).
  std::string within = "version: 1\n";
  for (int i = 0; i < 32; ++i) within += "x { ";
  within += std::string(32, '}');
  EXPECT_EQ(load_error(within).rfind("test.txtpb:2:1: x: unknown field", 0), 0u)
      << load_error(within);
  // Braces inside strings and comments do not count.
  const std::string quoted = "version: 1\nname: \"" + std::string(100, '{') + "\" # " +
                             std::string(100, '[') + "\nmodel { lyers: 2 }\n";
  EXPECT_NE(load_error(quoted).find("model.lyers: unknown field"), std::string::npos)
      << load_error(quoted);
}

TEST(RecipeParse, SingularFieldTwiceIsAnError) {
  const std::string error = load_error("version: 1\nmodel {\n  width: 64\n  width: 32\n}\n");
  EXPECT_NE(error.find("test.txtpb:4:"), std::string::npos) << error;
  EXPECT_NE(error.find("model: "), std::string::npos) << error;
  EXPECT_NE(error.find("\"width\""), std::string::npos) << error;
}

TEST(RecipeParse, TwoMembersOfOneOneofIsAnError) {
  // train.steps and train.epochs are the oneof `length`: exactly one.
  const std::string error = load_error("version: 1\ntrain {\n  steps: 10\n  epochs: 2\n}\n");
  EXPECT_NE(error.find("test.txtpb:4:"), std::string::npos) << error;
  EXPECT_NE(error.find("train: "), std::string::npos) << error;
  EXPECT_NE(error.find("oneof"), std::string::npos) << error;
}

TEST(RecipeParse, WrongValueTypeIsAnError) {
  const std::string error = load_error("version: 1\nmodel { width: \"wide\" }\n");
  EXPECT_EQ(error.rfind("test.txtpb:2:16: model.width: ", 0), 0u) << error;
}

TEST(RecipeParse, ParsingStopsAtTheFirstError) {
  const std::string error = load_error("version: 1\nmodel { lyers: 2 }\ndata { corpse: \"x\" }\n");
  EXPECT_NE(error.find("test.txtpb:2:9: model.lyers: unknown field"), std::string::npos) << error;
  // The parser stops at the first error, so later lines are not judged: one line only.
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
}

TEST(RecipeParse, MissingFileIsARecipeError) {
  EXPECT_THROW(load_recipe("/nonexistent/recipe.txtpb"), RecipeError);
  try {
    load_recipe("/nonexistent/recipe.txtpb");
  } catch (const RecipeError& error) {
    EXPECT_EQ(std::string(error.what()), "/nonexistent/recipe.txtpb: cannot open the file");
  }
}

TEST(RecipeParse, RecipeErrorMeansExitCodeTwo) {
  EXPECT_EQ(RecipeError::kExitCode, 2);
}

// ---- versions ----

TEST(RecipeVersion, MissingVersionIsAnError) {
  EXPECT_EQ(
      load_error("model { width: 64 }\n"),
      "test.txtpb: version: missing; this Rota reads version 1 (add `version: 1` at the top)");
}

TEST(RecipeVersion, NonPositiveVersionIsAnError) {
  EXPECT_EQ(load_error("\nversion: 0\n"), "test.txtpb:2:1: version: must be >= 1 (got 0)");
}

TEST(RecipeVersion, FutureVersionIsRefusedForItsVersion) {
  EXPECT_EQ(load_error("version: 7\nmodel { width: 64 }\n"),
            "test.txtpb:1:1: version: the recipe is version 7, newer than this Rota understands "
            "(up to 1); use a newer Rota");
}

TEST(RecipeVersion, FutureVersionWithNewFieldsIsRefusedForItsVersion) {
  // The new field alone would be an unknown-field error; the version is the real cause.
  EXPECT_EQ(load_error("version: 2\nmodel { brand_new_field: 3 }\n"),
            "test.txtpb: version: the recipe is version 2, newer than this Rota understands (up "
            "to 1); use a newer Rota");
}

TEST(RecipeVersion, UnknownFieldInACurrentRecipeStaysAnUnknownFieldError) {
  const std::string error = load_error("version: 1\nmodel { brand_new_field: 3 }\n");
  EXPECT_NE(error.find("model.brand_new_field: unknown field"), std::string::npos) << error;
}

TEST(RecipeVersion, UpgradeStepsApplyInOrder) {
  const std::vector<UpgradeStep> steps = {
      {2, "v2 → v3: width doubled",
       [](Recipe& r) { r.mutable_model()->set_width(r.model().width() * 2); }},
      {1, "v1 → v2: layers set", [](Recipe& r) { r.mutable_model()->set_layers(7); }},
  };
  Recipe recipe;
  recipe.set_version(1);
  recipe.mutable_model()->set_width(10);
  const std::vector<std::string> applied = upgrade_recipe(recipe, "f", steps, 3);
  EXPECT_EQ(recipe.version(), 3);
  EXPECT_EQ(recipe.model().layers(), 7);
  EXPECT_EQ(recipe.model().width(), 20);
  EXPECT_EQ(applied, (std::vector<std::string>{"v1 → v2: layers set", "v2 → v3: width doubled"}));
}

TEST(RecipeVersion, MissingUpgradeStepIsAnError) {
  Recipe recipe;
  recipe.set_version(1);
  try {
    upgrade_recipe(recipe, "f:1:1", {}, 2);
    FAIL() << "expected an error";
  } catch (const RecipeError& error) {
    EXPECT_EQ(std::string(error.what()), "f:1:1: version: no upgrade from version 1");
  }
}

TEST(RecipeVersion, CurrentVersionNeedsNoStep) {
  Recipe recipe;
  recipe.set_version(kRecipeVersion);
  EXPECT_TRUE(upgrade_recipe(recipe, "f").empty());
  EXPECT_EQ(recipe.version(), kRecipeVersion);
}

TEST(RecipeVersion, PeekReadsTheVersionDespiteUnknownFields) {
  EXPECT_EQ(peek_version("version: 3 future { x: 1 }", Recipe::default_instance()), 3);
  EXPECT_EQ(peek_version("model { width: 3 }", Recipe::default_instance()), std::nullopt);
  EXPECT_EQ(peek_version("version: {", Recipe::default_instance()), std::nullopt);
}

// ---- the helpers behind the messages ----

TEST(EnclosingPath, TracksOpenBlocks) {
  const std::string text =
      "a {\n  b: {\n    c: 1\n  }\n  d <\n    e: 2 # } not a brace\n  >\n}\nf: 3\n";
  EXPECT_EQ(enclosing_path(text, 0, 0), "");
  EXPECT_EQ(enclosing_path(text, 2, 4), "a.b");
  EXPECT_EQ(enclosing_path(text, 4, 2), "a");
  EXPECT_EQ(enclosing_path(text, 5, 4), "a.d");
  EXPECT_EQ(enclosing_path(text, 8, 0), "");
}

TEST(EnclosingPath, ListsOfMessagesUseTheListField) {
  const std::string text = "v: [{n: 1}, {n: 2}]\n";
  EXPECT_EQ(enclosing_path(text, 0, 14), "v");
  EXPECT_EQ(enclosing_path(text, 0, 19), "");
}

TEST(EnclosingPath, NamesTheFieldWhoseValueStartsThere) {
  const std::string text = "a {\n  w: abc\n  l: [1, x]\n}\n";
  std::string field;
  EXPECT_EQ(enclosing_path(text, 1, 5, field), "a");
  EXPECT_EQ(field, "w");
  EXPECT_EQ(enclosing_path(text, 2, 9, field), "a");
  EXPECT_EQ(field, "l");
  EXPECT_EQ(enclosing_path(text, 1, 2, field), "a");  // at a field name: no value field
  EXPECT_EQ(field, "");
}

TEST(ParseText, AWrongValueNamesItsFieldNotTheBlock) {
  Recipe recipe;
  SourceMap source{"r.txtpb"};
  const std::string text = "version: 1\nmodel {\n  kind: CAUSAL_LM\n  width: abc\n}\n";
  try {
    parse_text(text, source, recipe);
    FAIL() << "parsed";
  } catch (const RecipeError& error) {
    EXPECT_NE(std::string(error.what()).find("r.txtpb:4:10: model.width: Expected integer"),
              std::string::npos)
        << error.what();
  }
}

TEST(SourceMapLocate, FallsBackToTheNearestWrittenAncestor) {
  SourceMap source("f.txtpb");
  Recipe recipe;
  parse_text("version: 1\nmodel {\n  width: 64\n}\n", source, recipe);
  EXPECT_EQ(source.locate(Recipe::descriptor(), "model.width"), "f.txtpb:3:3");
  EXPECT_EQ(source.locate(Recipe::descriptor(), "model.heads"), "f.txtpb:2:1");
  EXPECT_EQ(source.locate(Recipe::descriptor(), "data.corpus"), "f.txtpb");
  EXPECT_EQ(source.locate(Recipe::descriptor(), "version"), "f.txtpb:1:1");
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::recipes
