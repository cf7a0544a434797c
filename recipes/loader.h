// Loading recipes: read, upgrade, override, resolve, validate; and printing the resolved recipe.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "recipes/recipe.pb.h"
#include "recipes/recipe_error.h"

namespace rota::recipes {

/// The model block a fine-tuning recipe's finetune.init_from was trained with, if it can be read.
using PretrainedModel = std::function<std::optional<Model>(const std::string& init_from)>;

/// What the CLI does with `rota train RECIPE --set ...`:
/// 1. parse the text format (syntax errors and unknown fields: `file:line:col: path: what`);
/// 2. check `version` and upgrade an older recipe (upgrade.h);
/// 3. apply `overrides` in order, the last one winning (overrides.h);
/// 4. set `name` to the file's stem when unset;
/// 5. resolve (resolve.h) and validate (validate.h).
/// Returns the resolved recipe. Throws RecipeError listing every problem, one per line, each
/// located at `file:line:col` of the offending field (or its nearest written ancestor) or at
/// the `--set` that set it, followed by the field path.
///
/// With `pretrained`, a recipe with finetune.init_from inherits its model block after step 3:
/// pretrained(init_from) gives the model the pretrained run was trained with (nullopt when it
/// cannot be read: the recipe's own block stands, and loading the weights says what is wrong),
/// and the fields the recipe writes win over it (model_inheritance.h).
Recipe load_recipe(const std::filesystem::path& file, std::span<const std::string> overrides = {},
                   const PretrainedModel& pretrained = {});

/// The same from text; `source_name` names it in messages (and gives the default name).
Recipe load_recipe_text(std::string_view text, std::string_view source_name,
                        std::span<const std::string> overrides = {},
                        const PretrainedModel& pretrained = {});

/// The recipe in protobuf text format, preceded by `# ` comment lines for `header` (one per
/// line; none when empty). Reading it back with load_recipe_text gives an equal recipe.
std::string format_recipe(const Recipe& recipe, std::string_view header = "");

/// The contents of `file`; RecipeError when it cannot be read.
std::string read_text_file(const std::filesystem::path& file);

}  // namespace rota::recipes
