// The runs of an ablation (variant × seed, one or two stages) and their `rota train` commands.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "recipes/ablation.h"
#include "recipes/recipe.pb.h"

namespace rota::experiments {

/// One training stage of one run: what `rota train` is given and where it writes.
struct StagePlan {
  int index = 0;                       // 0: the base recipe; 1: the follow-up
  std::filesystem::path recipe_file;   // the recipe file passed to rota train
  std::vector<std::string> overrides;  // its --set values, the run's name last
  std::filesystem::path run_dir;       // --out
  recipes::Recipe recipe;              // the resolved recipe (what rota train will resolve)
  std::string recipe_text;             // format_recipe(recipe): what the run directory holds
};

/// One variant × seed.
struct PlannedRun {
  int variant_index = 0;
  std::string variant;
  uint64_t seed = 0;
  std::filesystem::path dir;      // OUT/runs/<variant>/seed<S> (also the first stage's run)
  std::vector<StagePlan> stages;  // one, or two with a follow-up
};

/// A share of an ablation's runs (`rota ablate --shard K/N`): run i of the plan (file order,
/// from 0) belongs to shard (i mod N) + 1, so the same K/N always picks the same runs and the
/// shards interleave variants and seeds (each holds a similar mix of run lengths).
struct Shard {
  int index = 1;  // K, 1-based
  int count = 1;  // N
  bool holds(size_t run) const { return static_cast<int>(run % count) == index - 1; }
  int of(size_t run) const { return static_cast<int>(run % count) + 1; }
  bool whole() const { return count == 1; }
};

/// Parses "K/N" (1 <= K <= N <= 10000); throws rota::Error saying what is expected.
Shard parse_shard(const std::string& text);

/// The default output directory: runs/ablations/<ablation name>.
std::filesystem::path default_ablation_out(const recipes::AblationPlan& plan);

/// Every variant × seed in file order (variants outer, seeds inner), with absolute run
/// directories under `out`: the first stage trains in OUT/runs/<variant>/seed<S>/, a follow-up
/// in OUT/runs/<variant>/seed<S>/follow_up/ with finetune.init_from = the first stage's run
/// directory (its final checkpoint). Throws RecipeError when a recipe does not load.
std::vector<PlannedRun> plan_runs(const recipes::AblationPlan& plan,
                                  const std::filesystem::path& out);

/// `rota train RECIPE --set ... --out RUN --resume` for a stage, with `program_name` as argv[0].
std::vector<std::string> train_argv(const StagePlan& stage, const std::string& program_name);

/// The primary metric of a recipe's model: "ppl" for language models; for classifiers the
/// metric that picks the best checkpoint (train.best_metric, else mcc for CoLA, else accuracy).
std::string primary_metric(const recipes::Recipe& recipe);
/// Whether a larger primary metric is better (accuracy, mcc) or not (ppl).
bool primary_higher_is_better(const recipes::Recipe& recipe);
/// The metrics reported for a recipe's model kind: {loss, ppl} or {loss, accuracy, mcc}.
std::vector<std::string> reported_metrics(const recipes::Recipe& recipe);
/// "causal_lm", "masked_lm" or "classifier".
std::string model_kind_name(const recipes::Recipe& recipe);

}  // namespace rota::experiments
