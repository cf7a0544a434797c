// Loading ablations (`rota ablate`): base recipe, variants × seeds, follow-up stage, run recipes.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "recipes/recipe.pb.h"

namespace rota::recipes {

/// One factor of a grid of variants: the `variant` list (named "variant") or an `axis`.
struct GridAxis {
  std::string name;
  std::vector<std::string> levels;  // level names, in file order
};

/// At most this many variants (the product of a grid's axes).
inline constexpr int kMaxVariants = 1000;

/// A checked ablation file with its paths resolved.
struct AblationPlan {
  /// The file as parsed, except that `variant` holds every variant: the grid's product when the
  /// file has axes (composed names, overrides and descriptions), else the file's own list.
  Ablation ablation;
  std::filesystem::path file;              // the ablation file itself
  std::filesystem::path base_recipe;       // `base`, relative to the ablation file's directory
  std::filesystem::path follow_up_recipe;  // follow_up.recipe, likewise; empty without one
  /// The grid's factors (the `variant` list first when it has entries, then the axes); empty
  /// for a plain list of variants.
  std::vector<GridAxis> axes;
  /// Per variant, its level index on each of `axes` (empty without axes).
  std::vector<std::vector<int>> levels;
  /// Per variant, the variant it is compared with (its own index for a baseline); empty
  /// without `baseline`.
  std::vector<int> baseline_of;
};

/// The variants of a grid, without loading any recipe: the product of the `variant` list (when
/// it has entries) and the axes, first factor outermost. A variant's name joins its levels'
/// names with '_', its overrides are theirs in factor order, its description joins the
/// non-empty ones with ", ". Without axes: the `variant` list as written. Fills plan.axes and
/// plan.levels when `plan` is given. Throws RecipeError (prefixed "FILE: ") for more than
/// kMaxVariants variants, or for overrides of two factors that set the same field, where a
/// later one replaces (a prefix of) the field an earlier one set or selects another member of
/// a oneof the earlier one chose.
std::vector<Variant> expand_variants(const Ablation& ablation, const std::string& file,
                                     AblationPlan* plan = nullptr);

/// Parses `file` (errors at file:line:col), checks its own fields (version, base, at least one
/// variant or axis, file-name-safe unique names of variants, axes and levels, at least one
/// seed, no duplicate seeds or multipliers, multipliers >= 1), expands the grid
/// (expand_variants), resolves `baseline` (a variant name, or AXIS=LEVEL) and checks that
/// every variant's run recipe — and follow-up recipe — loads and validates, so a bad override
/// fails before hours of training. `name` defaults to the file's stem. Throws RecipeError;
/// errors inside a variant start with "FILE: variant 'NAME': ".
/// `overrides` (rota ablate --set / --unset) are added after the file's own `overrides`, so they
/// apply to every run and every variant's overrides still come after them.
AblationPlan load_ablation(const std::filesystem::path& file,
                           const std::vector<std::string>& overrides = {});

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
