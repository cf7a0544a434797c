// Recipe schema versions and the upgrade path.
#include "recipes/upgrade.h"

#include "recipes/recipe_error.h"

namespace rota::recipes {

std::span<const UpgradeStep> upgrade_steps() {
  static const std::vector<UpgradeStep> kSteps = {};  // version 1 is the first schema
  return kSteps;
}

std::vector<std::string> upgrade_recipe(Recipe& recipe, const std::string& where,
                                        std::span<const UpgradeStep> steps, int target) {
  const std::string prefix = where + ": version: ";
  if (!recipe.has_version()) {
    throw RecipeError(prefix + "missing; this Rota reads version " + std::to_string(target) +
                      " (add `version: " + std::to_string(target) + "` at the top)");
  }
  if (recipe.version() < 1) {
    throw RecipeError(prefix + "must be >= 1 (got " + std::to_string(recipe.version()) + ")");
  }
  if (recipe.version() > target) {
    throw RecipeError(prefix + "the recipe is version " + std::to_string(recipe.version()) +
                      ", newer than this Rota understands (up to " + std::to_string(target) +
                      "); use a newer Rota");
  }
  std::vector<std::string> applied;
  while (recipe.version() < target) {
    const UpgradeStep* step = nullptr;
    for (const UpgradeStep& candidate : steps) {
      if (candidate.from == recipe.version()) step = &candidate;
    }
    if (step == nullptr) {
      throw RecipeError(prefix + "no upgrade from version " + std::to_string(recipe.version()));
    }
    step->apply(recipe);
    recipe.set_version(step->from + 1);
    applied.push_back(step->what);
  }
  return applied;
}

}  // namespace rota::recipes
