// Ablation files: parsing, their own checks, and the recipe of every run and follow-up stage.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "recipes/ablation.h"
#include "recipes/loader.h"

namespace rota::recipes {
namespace {

namespace fs = std::filesystem;

const fs::path kRecipes = fs::path(ROTA_SOURCE_DIR) / "recipes";

/// A scratch directory with a copy of the tiny causal LM as `base.txtpb`.
class AblationFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    directory_ = fs::temp_directory_path() /
                 ("rota_ablation_test_" + std::to_string(::getpid()) + "_" +
                  ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(directory_);
    fs::create_directories(directory_);
    fs::copy_file(kRecipes / "tests" / "tiny_causal_lm.txtpb", directory_ / "base.txtpb");
  }
  void TearDown() override { fs::remove_all(directory_); }

  fs::path write(const std::string& name, const std::string& text) {
    std::ofstream(directory_ / name) << text;
    return directory_ / name;
  }
  std::string error_of(const std::string& text) {
    const fs::path file = write("ablation.txtpb", text);
    try {
      load_ablation(file);
    } catch (const RecipeError& error) {
      return error.what();
    }
    return "";
  }

  fs::path directory_;
};

TEST(Ablation, TinyAblationPlan) {
  const AblationPlan plan = load_ablation(kRecipes / "tests" / "tiny_ablation.txtpb");
  EXPECT_EQ(plan.ablation.name(), "tiny-ablation");
  EXPECT_EQ(plan.base_recipe, kRecipes / "tests" / "tiny_causal_lm.txtpb");
  EXPECT_TRUE(plan.follow_up_recipe.empty());
  ASSERT_EQ(plan.ablation.variant_size(), 2);
  EXPECT_EQ(plan.ablation.seeds_size(), 2);

  const Variant& nope = plan.ablation.variant(0);
  EXPECT_EQ(
      run_overrides(plan, nope, 2),
      (std::vector<std::string>{"train.steps=6", "train.eval_every=3", "train.checkpoint_every=3",
                                "model.position={none {}}", "train.seed=2"}));
  const Recipe recipe = run_recipe(plan, nope, 2);
  EXPECT_EQ(recipe.name(), "tiny-ablation-nope-seed2");
  EXPECT_EQ(recipe.train().seed(), 2u);
  EXPECT_EQ(recipe.train().steps(), 6);
  EXPECT_TRUE(recipe.model().position().has_none());

  const Recipe lrpe = run_recipe(plan, plan.ablation.variant(1), 1);
  EXPECT_TRUE(lrpe.model().position().has_lrpe());  // no overrides: the base recipe
  EXPECT_EQ(lrpe.train().seed(), 1u);
}

TEST(Ablation, FollowUpCarriesTheModelOverridesAndTheCheckpoint) {
  const AblationPlan plan = load_ablation(kRecipes / "ablations" / "bidirectional_glue.txtpb");
  const Variant* rope = nullptr;
  for (const Variant& variant : plan.ablation.variant()) {
    if (variant.name() == "rope") rope = &variant;
  }
  ASSERT_NE(rope, nullptr);
  const std::vector<std::string> overrides =
      follow_up_overrides(plan, *rope, 3, "runs/x/checkpoints/step_000800");
  EXPECT_EQ(overrides,
            (std::vector<std::string>{"model.position={rope {}}", "train.epochs=1", "train.seed=3",
                                      "finetune.init_from=runs/x/checkpoints/step_000800"}));
  const Recipe first = run_recipe(plan, *rope, 3);
  EXPECT_EQ(first.model().kind(), Model::MASKED_LM);
  EXPECT_EQ(first.train().steps(), 800);
  const Recipe second = follow_up_recipe(plan, *rope, 3, "runs/x/checkpoints/step_000800");
  EXPECT_EQ(second.model().kind(), Model::CLASSIFIER);
  EXPECT_TRUE(second.model().position().has_rope());
  EXPECT_EQ(second.finetune().init_from(), "runs/x/checkpoints/step_000800");
  EXPECT_EQ(second.train().epochs(), 1.0);
  EXPECT_EQ(second.train().seed(), 3u);
  EXPECT_EQ(second.name(), "bidirectional-glue-rope-seed3-sst2_from_mlm");
}

TEST(Ablation, FollowUpWithoutOneIsAnError) {
  const AblationPlan plan = load_ablation(kRecipes / "tests" / "tiny_ablation.txtpb");
  EXPECT_THROW(follow_up_recipe(plan, plan.ablation.variant(0), 1, "x"), RecipeError);
}

TEST_F(AblationFiles, NameDefaultsToTheFileStem) {
  const fs::path file =
      write("my_study.txtpb", "version: 1 base: \"base.txtpb\" variant { name: \"a\" } seeds: 1");
  EXPECT_EQ(load_ablation(file).ablation.name(), "my_study");
}

TEST_F(AblationFiles, BadVariantOverrideNamesTheVariantAndTheOverride) {
  const std::string error = error_of(
      "version: 1\nbase: \"base.txtpb\"\nvariant { name: \"ok\" }\n"
      "variant { name: \"bad\" overrides: \"model.lyers=3\" }\nseeds: [1]\n");
  EXPECT_EQ(error.rfind(directory_.string() +
                            "/ablation.txtpb:4:1: variant 'bad': --set "
                            "model.lyers=3: model: unknown field 'lyers' (did you mean 'layers'?)",
                        0),
            0u)
      << error;
}

TEST_F(AblationFiles, InvalidVariantRecipeIsReported) {
  const std::string error = error_of(
      "version: 1\nbase: \"base.txtpb\"\n"
      "variant { name: \"shaw\" overrides: \"model.position={shaw {}}\" }\nseeds: [1]\n");
  EXPECT_NE(error.find("ablation.txtpb:3:1: variant 'shaw': --set model.position={shaw {}}: "
                       "model.position.shaw: Shaw's relative tables needs softmax attention"),
            std::string::npos)
      << error;
}

TEST_F(AblationFiles, OwnFieldsAreChecked) {
  const std::string prefix = directory_.string() + "/ablation.txtpb";
  EXPECT_EQ(error_of("base: \"base.txtpb\" variant { name: \"a\" } seeds: 1"),
            prefix + ": version: missing; this Rota reads version 1");
  EXPECT_EQ(error_of("version: 1 variant { name: \"a\" } seeds: 1"),
            prefix + ": base: required: the base recipe's path");
  EXPECT_EQ(error_of("version: 1 base: \"base.txtpb\" seeds: 1"),
            prefix + ": variant: at least one is required");
  EXPECT_EQ(error_of("version: 1 base: \"base.txtpb\" variant { name: \"a\" }"),
            prefix + ": seeds: at least one is required");
  EXPECT_EQ(error_of("version: 1 base: \"base.txtpb\"\nvariant { name: \"a\" }\nvariant { name: "
                     "\"a\" } seeds: 1"),
            prefix + ":3:11: variant[1].name: 'a' is used by two variants");
  EXPECT_EQ(error_of("version: 1 base: \"base.txtpb\" variant { name: \"a/b\" } seeds: 1"),
            prefix +
                ":1:41: variant[0].name: 'a/b' must be non-empty and use only letters, "
                "digits, '_', '-', '.' (it names run directories)");
  EXPECT_EQ(error_of("version: 1 base: \"base.txtpb\" variant { name: \"a\" } seeds: [1, 1]"),
            prefix + ":1:53: seeds[1]: seed 1 is listed twice");
  EXPECT_EQ(error_of("version: 1 base: \"base.txtpb\" variant { name: \"a\" } seeds: 1 "
                     "context_multipliers: [1, 0]"),
            prefix + ":1:62: context_multipliers[1]: must be >= 1 (got 0)");
  EXPECT_EQ(error_of("version: 1 base: \"base.txtpb\" variant { name: \"a\" } seeds: 1 "
                     "follow_up { overrides: \"x=1\" }"),
            prefix + ":1:62: follow_up.recipe: required: the second-stage recipe's path");
}

TEST_F(AblationFiles, MissingBaseRecipeIsReported) {
  const std::string error =
      error_of("version: 1 base: \"nowhere.txtpb\" variant { name: \"a\" } seeds: 1");
  EXPECT_NE(error.find("variant 'a': " + (directory_ / "nowhere.txtpb").string() +
                       ": cannot open the file"),
            std::string::npos)
      << error;
}

TEST_F(AblationFiles, UnknownFieldInTheAblationIsLocated) {
  EXPECT_EQ(
      error_of("version: 1\nbase: \"base.txtpb\"\nvariants { name: \"a\" }\n")
          .rfind(directory_.string() + "/ablation.txtpb:3:1: variants: unknown field (did you mean "
                                       "'variant'?)",
                 0),
      0u);
}

}  // namespace
}  // namespace rota::recipes
