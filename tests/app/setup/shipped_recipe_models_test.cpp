// Every shipped recipe and every ablation run builds its model and runs one training step.
#include <algorithm>
#include <cmath>
#include <filesystem>

#include <gtest/gtest.h>

#include "app/setup/model_setup.h"
#include "models/language_models.h"
#include "recipes/ablation.h"
#include "recipes/loader.h"
#include "tests/support/source_tree.h"

namespace rota::models {
namespace ROTA_TEST_FILE_NS {

namespace fs = std::filesystem;

const fs::path kRecipes = fs::path(ROTA_SOURCE_DIR) / "recipes";

// Builds the recipe's model (vocabulary 300, a stand-in for the tokenizer's) and checks that a
// short batch gives a finite loss whose gradient reaches every trainable parameter.
void expect_model_trains(const recipes::Recipe& recipe, const std::string& what) {
  SCOPED_TRACE(what);
  ModelOptions o = app::model_options_from_recipe(recipe, 300);
  // Keep the test small: the point is that every configuration builds and runs.
  o.layers = std::min<int64_t>(o.layers, 2);
  o.dropout = 0;
  Generator init(1), data(2);
  const int64_t batch = 2, length = std::min<int64_t>(recipe.data().sequence_length(), 24);
  Tensor ids = randint({batch, length}, data, 0, 300);
  Tensor mask = ones({batch, length});
  Variable loss;
  std::unique_ptr<nn::Module> model;
  switch (o.kind) {
    case ModelKind::kCausalLm: {
      auto m = std::make_unique<CausalLm>(o, init, nullptr);
      loss = m->loss(ids, randint({batch, length}, data, 0, 300));
      model = std::move(m);
      break;
    }
    case ModelKind::kMaskedLm: {
      auto m = std::make_unique<MaskedLm>(o, init, nullptr);
      loss = m->loss(ids, randint({batch, length}, data, 0, 300), mask);
      model = std::move(m);
      break;
    }
    case ModelKind::kClassifier: {
      auto m = std::make_unique<Classifier>(o, init, nullptr);
      loss = m->loss(ids, mask, randint({batch}, data, 0, o.num_classes));
      model = std::move(m);
      break;
    }
  }
  ASSERT_TRUE(std::isfinite(loss.item()));
  loss.backward();
  for (const auto& [name, p] : model->named_parameters()) {
    if (!p.requires_grad()) continue;
    EXPECT_TRUE(p.grad().defined()) << name << " gets no gradient";
  }
}

std::vector<fs::path> files_under(const std::string& dir) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::recursive_directory_iterator(kRecipes / dir)) {
    if (entry.path().extension() == ".txtpb") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST(ShippedRecipeModels, EveryRecipeBuildsAndTrains) {
  std::vector<fs::path> files = {kRecipes / "default.txtpb"};
  for (const char* dir : {"causal_lm", "masked_lm", "classifier", "bench", "tests"}) {
    for (const auto& f : files_under(dir)) {
      if (f.stem().string().find("ablation") == std::string::npos) files.push_back(f);
    }
  }
  ASSERT_GT(files.size(), 15u);
  for (const auto& file : files) {
    expect_model_trains(recipes::load_recipe(file), file.string());
  }
}

TEST(ShippedRecipeModels, EveryAblationRunBuildsAndTrains) {
  std::vector<fs::path> files = files_under("ablations");
  files.push_back(kRecipes / "tests" / "tiny_ablation.txtpb");
  for (const auto& file : files) {
    const recipes::AblationPlan plan = recipes::load_ablation(file);
    for (const auto& variant : plan.ablation.variant()) {
      const uint64_t seed = plan.ablation.seeds(0);
      expect_model_trains(recipes::run_recipe(plan, variant, seed),
                          file.filename().string() + ": " + variant.name());
      if (!plan.follow_up_recipe.empty()) {
        expect_model_trains(recipes::follow_up_recipe(plan, variant, seed, "unused"),
                            file.filename().string() + ": " + variant.name() + " follow-up");
      }
    }
  }
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::models
