// Loading ablations (`rota ablate`): base recipe, variants × seeds, follow-up stage, run recipes.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "recipes/recipe.pb.h"

namespace rota::recipes {

/// A checked ablation file with its paths resolved.
struct AblationPlan {
  Ablation ablation;
  std::filesystem::path file;              // the ablation file itself
  std::filesystem::path base_recipe;       // `base`, relative to the ablation file's directory
  std::filesystem::path follow_up_recipe;  // follow_up.recipe, likewise; empty without one
};

/// Parses `file` (errors at file:line:col), checks its own fields (version, base, at least one
/// variant with a unique, file-name-safe name, at least one seed, no duplicate seeds or
/// multipliers, multipliers >= 1) and that every variant's run recipe — and follow-up recipe —
/// loads and validates, so a bad override fails before hours of training. `name` defaults to
/// the file's stem. Throws RecipeError; errors inside a variant start with
/// "FILE: variant 'NAME': ".
AblationPlan load_ablation(const std::filesystem::path& file);

/// The overrides of one run, in order: the ablation's, the variant's, then `train.seed=SEED`.
std::vector<std::string> run_overrides(const AblationPlan& plan, const Variant& variant,
                                       uint64_t seed);

/// The resolved recipe of one run (the base recipe with run_overrides). Its name is
/// "<ablation>-<variant>-seed<SEED>".
Recipe run_recipe(const AblationPlan& plan, const Variant& variant, uint64_t seed);

/// The overrides of the follow-up stage: the `model.` overrides of the ablation and the
/// variant (so the architecture matches the first stage's checkpoint), follow_up.overrides,
/// `train.seed=SEED` and `finetune.init_from=INIT_FROM`.
std::vector<std::string> follow_up_overrides(const AblationPlan& plan, const Variant& variant,
                                             uint64_t seed, const std::string& init_from);

/// The resolved follow-up recipe of one run, initialised from `init_from` (the first stage's
/// final checkpoint). Its name is "<ablation>-<variant>-seed<SEED>-<follow-up recipe stem>".
/// RecipeError when the ablation has no follow-up.
Recipe follow_up_recipe(const AblationPlan& plan, const Variant& variant, uint64_t seed,
                        const std::string& init_from);

}  // namespace rota::recipes
