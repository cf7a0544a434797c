// Recipe schema versions: the current version and the upgrade path for older recipes.
#pragma once

#include <functional>
#include <span>
#include <string>

#include "recipes/recipe.pb.h"

namespace rota::recipes {

/// The schema version this build reads and writes (Recipe.version, Ablation.version).
inline constexpr int kRecipeVersion = 1;

/// One step of the upgrade path: turns a recipe of version `from` into version `from + 1`.
/// A field removed from the schema stays in recipe.proto, marked deprecated, until the step
/// that moves its value away (Caffe's upgrade_proto approach).
struct UpgradeStep {
  int from;
  std::string what;  // one line for the log, e.g. "v1 → v2: model.ffn renamed ffn_width"
  std::function<void(Recipe&)> apply;
};

/// The steps from every older version to kRecipeVersion (none yet: version 1 is the first).
std::span<const UpgradeStep> upgrade_steps();

/// Brings `recipe` to `target` by applying `steps` in order from its version; returns the
/// lines of the steps applied. Throws RecipeError (located by `where`, e.g. "file:3:1") when
/// the version is missing, < 1, newer than `target`, or has no step.
std::vector<std::string> upgrade_recipe(Recipe& recipe, const std::string& where,
                                        std::span<const UpgradeStep> steps = upgrade_steps(),
                                        int target = kRecipeVersion);

}  // namespace rota::recipes
