// rota recipe show / diff: flattening a resolved recipe and the differences between two.
#include "app/run/recipe_run.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tests/support/source_tree.h"

namespace rota::app {
namespace ROTA_TEST_FILE_NS {

const std::string kTiny = std::string(ROTA_SOURCE_DIR) + "/recipes/tests/tiny_causal_lm.txtpb";

TEST(RecipeRun, FlattenListsEveryResolvedFieldInSchemaOrder) {
  const recipes::Recipe recipe = load_recipe_or_run(kTiny);
  const auto fields = flatten_recipe(recipe);
  ASSERT_FALSE(fields.empty());
  EXPECT_EQ(fields.front(), (std::pair<std::string, std::string>{"version", "1"}));
  auto value_of = [&](const std::string& path) {
    for (const auto& [p, v] : fields) {
      if (p == path) return v;
    }
    return std::string("(absent)");
  };
  EXPECT_EQ(value_of("model.width"), "32");
  EXPECT_EQ(value_of("model.ffn_activation"), "GELU");  // a default, written out by resolving
  EXPECT_EQ(value_of("model.position.lrpe.p"), "HOUSEHOLDER");
  EXPECT_EQ(value_of("train.sample.prompt"), "\"ROMEO:\"");
  const std::vector<std::string> nope = {"model.position={none {}}"};
  const auto nope_fields = flatten_recipe(load_recipe_or_run(kTiny, nope));
  EXPECT_NE(std::find(nope_fields.begin(), nope_fields.end(),
                      std::pair<std::string, std::string>{"model.position.none", "{}"}),
            nope_fields.end());
}

TEST(RecipeRun, DifferencesNameEachFieldBothWays) {
  const std::vector<std::string> changes = {"model.layers=3", "model.position={rope {}}",
                                            "!train.sample"};
  const std::vector<std::string> lines =
      recipe_differences(load_recipe_or_run(kTiny), load_recipe_or_run(kTiny, changes));
  auto has = [&](const std::string& line) {
    return std::find(lines.begin(), lines.end(), line) != lines.end();
  };
  EXPECT_TRUE(has("model.layers: 2 → 3"));
  EXPECT_TRUE(has("model.position.lrpe.type: 2 → (unset)"));
  EXPECT_TRUE(has("model.position.rope.base: (unset) → 10000"));
  EXPECT_TRUE(has("train.sample.prompt: \"ROMEO:\" → (unset)"));
  EXPECT_TRUE(recipe_differences(load_recipe_or_run(kTiny), load_recipe_or_run(kTiny)).empty());
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::app
