// `rota recipe show` and `rota recipe diff`: resolved recipes, and what differs between two.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "recipes/recipe.pb.h"

namespace rota::app {

/// A recipe file, or a run or checkpoint directory (its recipe.txtpb), loaded and resolved
/// with `overrides` (--set / --unset) applied.
recipes::Recipe load_recipe_or_run(const std::string& path,
                                   const std::vector<std::string>& overrides = {});

/// Every field set in a resolved recipe as "path" → "value" in schema order (repeated fields as
/// path[i]; an empty message that is set, such as `none {}`, as "{}").
std::vector<std::pair<std::string, std::string>> flatten_recipe(const recipes::Recipe& recipe);

/// The lines of `rota recipe diff`: "path: a → b", "path: a → (unset)", "path: (unset) → b".
std::vector<std::string> recipe_differences(const recipes::Recipe& a, const recipes::Recipe& b);

/// Prints the resolved recipe (every default written out). Returns the exit code.
int run_recipe_show(const std::string& path, const std::vector<std::string>& overrides);

/// Prints what differs between two recipes or runs, one field per line, or "the recipes are
/// the same". Returns the exit code (0 either way).
int run_recipe_diff(const std::string& a, const std::string& b);

}  // namespace rota::app
