// Ablation files: parsing, their own checks, and the recipe of every run and follow-up stage.
#include <gtest/gtest.h>

#include <google/protobuf/text_format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "recipes/ablation.h"
#include "recipes/loader.h"
#include "tests/support/source_tree.h"

namespace rota::recipes {
namespace ROTA_TEST_FILE_NS {

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

TEST(Ablation, CommandLineOverridesApplyToEveryRunBeforeTheVariants) {
  // rota ablate --set / --unset: after the file's overrides, before each variant's.
  const std::vector<std::string> extra = {"model.layers=3", "model.position={rope {}}",
                                          "!train.sample"};
  const AblationPlan plan = load_ablation(kRecipes / "tests" / "tiny_ablation.txtpb", extra);
  ASSERT_EQ(plan.ablation.variant_size(), 2);
  for (const Variant& variant : plan.ablation.variant()) {
    const Recipe recipe = run_recipe(plan, variant, 1);
    EXPECT_EQ(recipe.model().layers(), 3) << variant.name();
    EXPECT_FALSE(recipe.train().has_sample()) << variant.name();
    EXPECT_EQ(recipe.train().steps(), 6);  // the file's own overrides still apply
  }
  // The variant's own override wins over the command line's for its field.
  EXPECT_TRUE(run_recipe(plan, plan.ablation.variant(0), 1).model().position().has_none());
  EXPECT_TRUE(run_recipe(plan, plan.ablation.variant(1), 1).model().position().has_rope());
  // A bad one is refused before anything runs, naming it.
  const std::vector<std::string> bad = {"model.layerz=3"};
  try {
    load_ablation(kRecipes / "tests" / "tiny_ablation.txtpb", bad);
    FAIL() << "loaded";
  } catch (const RecipeError& error) {
    EXPECT_NE(std::string(error.what()).find("--set model.layerz=3"), std::string::npos)
        << error.what();
  }
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
            prefix + ": variant: at least one variant or axis is required");
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

// ---- grids (axes) and the baseline --------------------------------------------------------

/// The ablation text with `body` after a base and a seed.
std::string ablation_text(const std::string& body) {
  return "version: 1\nbase: \"base.txtpb\"\nseeds: 1\n" + body;
}

/// expand_variants of `text` (an Ablation message); the error text when it throws.
std::string expansion_error(const std::string& text) {
  Ablation ablation;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &ablation)) << text;
  try {
    expand_variants(ablation, "f.txtpb");
  } catch (const RecipeError& error) {
    return error.what();
  }
  return "";
}

TEST(Ablation, ShippedPMatrixGridMakesTheTwelveRecipesOfTheExplicitList) {
  const AblationPlan plan = load_ablation(kRecipes / "ablations" / "p_matrix.txtpb");
  ASSERT_EQ(plan.ablation.variant_size(), 12);
  ASSERT_EQ(plan.axes.size(), 2u);
  EXPECT_EQ(plan.axes[0].name, "type");
  EXPECT_EQ(plan.axes[1].levels, (std::vector<std::string>{"householder", "householder_frozen",
                                                           "identity", "odd_even"}));
  const char* const ps[] = {"HOUSEHOLDER", "HOUSEHOLDER_FROZEN", "IDENTITY", "ODD_EVEN"};
  const char* const p_names[] = {"householder", "householder_frozen", "identity", "odd_even"};
  int v = 0;
  for (int type = 1; type <= 3; ++type) {
    for (int p = 0; p < 4; ++p, ++v) {
      const Variant& variant = plan.ablation.variant(v);
      // The names, descriptions and recipes of the list the grid replaced (one variant each,
      // with the whole position block in one override).
      EXPECT_EQ(variant.name(), "type" + std::to_string(type) + "_" + p_names[p]);
      EXPECT_EQ(variant.description(), "LRPE Type " + std::to_string(type) + ", P = " + p_names[p]);
      EXPECT_EQ(plan.levels[v], (std::vector<int>{type - 1, p}));
      Variant explicit_variant;
      explicit_variant.set_name(variant.name());
      explicit_variant.add_overrides("model.position={lrpe {type: " + std::to_string(type) +
                                     " p: " + ps[p] + (type < 3 ? " learn_theta: true" : "") +
                                     "}}");
      EXPECT_EQ(format_recipe(run_recipe(plan, variant, 2)),
                format_recipe(run_recipe(plan, explicit_variant, 2)))
          << variant.name();
      // baseline "p=householder": the learnable Householder P of the same Type.
      EXPECT_EQ(plan.baseline_of[v], (type - 1) * 4) << variant.name();
    }
  }
}

TEST(Ablation, ShippedEncodingsAblationComparesWithLrpeType2) {
  const AblationPlan plan = load_ablation(kRecipes / "ablations" / "encodings_causal.txtpb");
  ASSERT_EQ(plan.baseline_of.size(), 8u);
  EXPECT_TRUE(plan.axes.empty());
  for (const int b : plan.baseline_of) EXPECT_EQ(plan.ablation.variant(b).name(), "lrpe_type2");
}

TEST_F(AblationFiles, VariantListTimesAnAxisComposesNamesOverridesAndDescriptions) {
  const fs::path file = write("grid.txtpb", ablation_text(R"(
variant { name: "lrpe" description: "LRPE" }
variant { name: "nope" overrides: "model.position={none {}}" description: "NoPE" }
axis {
  name: "steps"
  level { name: "s4" overrides: "train.steps=4" overrides: "train.eval_every=2" description: "4 steps" }
  level { name: "s6" overrides: "train.steps=6" }
}
baseline: "variant=lrpe"
)"));
  const AblationPlan plan = load_ablation(file);
  ASSERT_EQ(plan.ablation.variant_size(), 4);
  std::vector<std::string> names, descriptions;
  for (const Variant& v : plan.ablation.variant()) {
    names.push_back(v.name());
    descriptions.push_back(v.description());
  }
  EXPECT_EQ(names, (std::vector<std::string>{"lrpe_s4", "lrpe_s6", "nope_s4", "nope_s6"}));
  EXPECT_EQ(descriptions,
            (std::vector<std::string>{"LRPE, 4 steps", "LRPE", "NoPE, 4 steps", "NoPE"}));
  EXPECT_EQ(std::vector<std::string>(plan.ablation.variant(2).overrides().begin(),
                                     plan.ablation.variant(2).overrides().end()),
            (std::vector<std::string>{"model.position={none {}}", "train.steps=4",
                                      "train.eval_every=2"}));
  ASSERT_EQ(plan.axes.size(), 2u);
  EXPECT_EQ(plan.axes[0].name, "variant");
  EXPECT_EQ(plan.axes[0].levels, (std::vector<std::string>{"lrpe", "nope"}));
  EXPECT_EQ(plan.levels, (std::vector<std::vector<int>>{{0, 0}, {0, 1}, {1, 0}, {1, 1}}));
  // "variant=lrpe": NoPE at 4 steps against LRPE at 4 steps, and so on.
  EXPECT_EQ(plan.baseline_of, (std::vector<int>{0, 1, 0, 1}));
  const Recipe recipe = run_recipe(plan, plan.ablation.variant(2), 1);
  EXPECT_TRUE(recipe.model().position().has_none());
  EXPECT_EQ(recipe.train().steps(), 4);
  EXPECT_EQ(recipe.name(), "grid-nope_s4-seed1");
}

TEST(Ablation, OverridesOfTwoAxesThatSetTheSameFieldAreAnError) {
  // A later axis replacing a field an earlier one set.
  EXPECT_EQ(expansion_error(R"(
axis { name: "a" level { name: "x" overrides: "train.steps=4" } }
axis { name: "b" level { name: "y" overrides: "train.steps=6" } })"),
            "f.txtpb: axis 'b' level 'y': 'train.steps=6' replaces train.steps, set by axis 'a' "
            "level 'x' ('train.steps=4'); the overrides of two axes must set different fields");
  // ... or a message that holds it.
  EXPECT_EQ(expansion_error(R"(
axis { name: "p" level { name: "identity" overrides: "model.position.lrpe.p=IDENTITY" } }
axis { name: "enc" level { name: "rope" overrides: "model.position={rope {}}" } })"),
            "f.txtpb: axis 'enc' level 'rope': 'model.position={rope {}}' replaces "
            "model.position.lrpe.p, set by axis 'p' level 'identity' "
            "('model.position.lrpe.p=IDENTITY'); the overrides of two axes must set different "
            "fields");
  // Selecting another member of a oneof clears what the earlier axis chose.
  EXPECT_EQ(expansion_error(R"(
variant { name: "rope500" overrides: "model.position.rope.base=500" }
axis { name: "p" level { name: "identity" overrides: "model.position.lrpe.p=IDENTITY" } })"),
            "f.txtpb: axis 'p' level 'identity': 'model.position.lrpe.p=IDENTITY' selects "
            "model.position.lrpe, which clears model.position.rope, set by variant 'rope500' "
            "('model.position.rope.base=500'); the overrides of two axes must set different "
            "fields");
  EXPECT_NE(expansion_error(R"(
variant { name: "nope" overrides: "model.position={none {}}" }
axis { name: "p" level { name: "identity" overrides: "model.position.lrpe.p=IDENTITY" } })")
                .find("selects model.position.lrpe, which clears model.position.none"),
            std::string::npos);
  // Every conflicting pair of levels is reported once.
  const std::string two = expansion_error(R"(
axis { name: "a" level { name: "x" overrides: "train.steps=4" } level { name: "z" } }
axis { name: "b" level { name: "y" overrides: "train.steps=6" } level { name: "w" overrides: "train.steps=8" } })");
  EXPECT_NE(two.find("axis 'b' level 'y'"), std::string::npos) << two;
  EXPECT_NE(two.find("axis 'b' level 'w'"), std::string::npos) << two;
  EXPECT_EQ(std::count(two.begin(), two.end(), '\n'), 1) << two;
}

TEST(Ablation, OverridesOfTwoAxesThatComposeAreAccepted) {
  // Refining inside a block an earlier axis set, appending twice, unrelated fields, and the
  // same field twice within one level (that level's own business).
  EXPECT_EQ(expansion_error(R"(
axis { name: "type" level { name: "t1" overrides: "model.position={lrpe {type: 1}}" } }
axis { name: "p" level { name: "id" overrides: "model.position.lrpe.p=IDENTITY" } }
axis { name: "f" level { name: "e" overrides: "finetune.freeze+=embeddings" } }
axis { name: "g" level { name: "b0" overrides: "finetune.freeze+=encoder.blocks.0." overrides: "train.steps=3" overrides: "train.steps=4" } })"),
            "");
}

TEST(Ablation, GridNamesMustBeDistinctAndTheGridSmall) {
  EXPECT_EQ(expansion_error(R"(
axis { name: "a" level { name: "x" } level { name: "x_y" } }
axis { name: "b" level { name: "y_z" } level { name: "z" } })"),
            "f.txtpb: axis: two variants are named 'x_y_z' (level names joined with '_'); rename "
            "a level");
  std::string big;
  for (int a = 0; a < 4; ++a) {
    big += "axis { name: \"a" + std::to_string(a) + "\"";
    for (int l = 0; l < 6; ++l) big += " level { name: \"l" + std::to_string(l) + "\" }";
    big += " }\n";
  }
  EXPECT_EQ(expansion_error(big), "f.txtpb: axis: the grid has more than 1000 variants");
}

TEST_F(AblationFiles, AxisFieldsAreChecked) {
  const std::string prefix = directory_.string() + "/ablation.txtpb";
  EXPECT_EQ(error_of(ablation_text("axis { name: \"a\" }")),
            prefix + ":4:1: axis[0].level: at least one is required");
  EXPECT_EQ(error_of(ablation_text("axis { name: \"a\" level { name: \"x\" } level { name: \"x\" "
                                   "} }")),
            prefix + ":4:46: axis[0].level[1].name: 'x' is used by two levels of this axis");
  EXPECT_EQ(error_of(ablation_text("axis { name: \"a\" level { name: \"x\" } }\naxis { name: "
                                   "\"a\" level { name: \"y\" } }")),
            prefix + ":5:8: axis[1].name: 'a' is used by two axes");
  EXPECT_EQ(error_of(ablation_text("variant { name: \"v\" }\naxis { name: \"variant\" level { "
                                   "name: \"y\" } }")),
            prefix +
                ":5:8: axis[0].name: 'variant' names the variant list's own axis; choose another "
                "name");
  EXPECT_EQ(error_of(ablation_text("axis { name: \"a b\" level { name: \"x\" } }")),
            prefix +
                ":4:8: axis[0].name: 'a b' must be non-empty and use only letters, digits, '_', "
                "'-', '.' (it names run directories)");
}

TEST_F(AblationFiles, TheBaselineMustNameAVariantOrAnAxisLevel) {
  const std::string prefix = directory_.string() + "/ablation.txtpb:";
  const std::string list = "variant { name: \"nope\" } variant { name: \"lrpe_type2\" }\n";
  EXPECT_EQ(error_of(ablation_text(list + "baseline: \"lrpe_typ2\"")),
            prefix +
                "5:1: baseline: 'lrpe_typ2' is not a variant (did you mean 'lrpe_type2'?); the "
                "variants: nope, lrpe_type2");
  EXPECT_EQ(error_of(ablation_text(list + "baseline: \"p=identity\"")),
            prefix + "5:1: baseline: 'p=identity': the ablation has no axes; name a variant");
  const std::string grid =
      "axis { name: \"type\" level { name: \"t1\" } level { name: \"t2\" } }\n"
      "axis { name: \"p\" level { name: \"householder\" } level { name: \"identity\" } }\n";
  EXPECT_EQ(error_of(ablation_text(grid + "baseline: \"q=identity\"")),
            prefix + "6:1: baseline: 'q' is not an axis (did you mean 'p'?); the axes: type, p");
  EXPECT_EQ(error_of(ablation_text(grid + "baseline: \"p=identiy\"")),
            prefix +
                "6:1: baseline: 'identiy' is not a level of axis 'p' (did you mean "
                "'identity'?); its levels: householder, identity");
  EXPECT_EQ(error_of(ablation_text(grid + "baseline: \"t2\"")),
            prefix +
                "6:1: baseline: 't2' is not a variant; to compare within an axis write "
                "AXIS=LEVEL; the variants: t1_householder, t1_identity, t2_householder, "
                "t2_identity");
  // A whole variant name of the grid: every variant against it.
  const fs::path file = write("ok.txtpb", ablation_text(grid + "baseline: \"t2_householder\""));
  EXPECT_EQ(load_ablation(file).baseline_of, (std::vector<int>{2, 2, 2, 2}));
  const fs::path by_axis = write("axis.txtpb", ablation_text(grid + "baseline: \"type=t1\""));
  EXPECT_EQ(load_ablation(by_axis).baseline_of, (std::vector<int>{0, 1, 0, 1}));
  // Without `baseline`, no comparison.
  EXPECT_TRUE(load_ablation(write("none.txtpb", ablation_text(grid))).baseline_of.empty());
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::recipes
