// The runs of an ablation and their `rota train` commands (see run_plan.h).
#include "experiments/run_plan.h"

#include <charconv>

#include <fmt/format.h>

#include "framework/base/error.h"
#include "recipes/loader.h"

namespace fs = std::filesystem;

namespace rota::experiments {

namespace {

/// The stage as rota train will see it: the recipe file, the overrides with the run's name
/// last, and the resolved recipe (loaded exactly as rota train loads it).
StagePlan make_stage(int index, const fs::path& recipe_file, std::vector<std::string> overrides,
                     const std::string& name, const fs::path& run_dir,
                     const recipes::PretrainedModel& pretrained = {}) {
  StagePlan stage;
  stage.index = index;
  stage.recipe_file = recipe_file;
  stage.overrides = std::move(overrides);
  stage.overrides.push_back("name=" + name);
  stage.run_dir = run_dir;
  stage.recipe = recipes::load_recipe(recipe_file, stage.overrides, pretrained);
  stage.recipe_text = recipes::format_recipe(stage.recipe);
  return stage;
}

}  // namespace

Shard parse_shard(const std::string& text) {
  const auto bad = [&text] {
    return Error(
        fmt::format("--shard '{}': expected K/N with 1 <= K <= N <= 10000 (e.g. 2/4: "
                    "the second of four shards)",
                    text));
  };
  const size_t slash = text.find('/');
  if (slash == std::string::npos) throw bad();
  Shard shard;
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  const auto k = std::from_chars(begin, begin + slash, shard.index);
  const auto n = std::from_chars(begin + slash + 1, end, shard.count);
  if (k.ec != std::errc() || k.ptr != begin + slash || n.ec != std::errc() || n.ptr != end ||
      slash == 0 || shard.count < 1 || shard.count > 10000 || shard.index < 1 ||
      shard.index > shard.count) {
    throw bad();
  }
  return shard;
}

fs::path default_ablation_out(const recipes::AblationPlan& plan) {
  return fs::path("runs") / "ablations" / plan.ablation.name();
}

std::vector<PlannedRun> plan_runs(const recipes::AblationPlan& plan, const fs::path& out) {
  // Absolute and normalised, so finetune.init_from (which is part of the follow-up's recipe,
  // checked on --resume) reads the same whatever directory rota ablate is started from.
  const fs::path root = fs::weakly_canonical(fs::absolute(out));
  std::vector<PlannedRun> runs;
  for (int v = 0; v < plan.ablation.variant_size(); ++v) {
    const recipes::Variant& variant = plan.ablation.variant(v);
    for (const uint64_t seed : plan.ablation.seeds()) {
      PlannedRun run;
      run.variant_index = v;
      run.variant = variant.name();
      run.seed = seed;
      run.dir = root / "runs" / variant.name() / ("seed" + std::to_string(seed));
      const std::string name = recipes::run_recipe(plan, variant, seed).name();
      run.stages.push_back(make_stage(0, plan.base_recipe,
                                      recipes::run_overrides(plan, variant, seed), name, run.dir));
      if (plan.ablation.has_follow_up()) {
        const fs::path follow_up_dir = run.dir / "follow_up";
        const std::string init_from = run.dir.string();
        const std::string follow_up_name =
            recipes::follow_up_recipe(plan, variant, seed, init_from).name();
        // The follow-up inherits the model of the first stage's run, as rota train will read
        // it from that run once it has trained.
        const recipes::Model first_model = run.stages.front().recipe.model();
        const recipes::PretrainedModel first_stage =
            [&](const std::string& from) -> std::optional<recipes::Model> {
          if (from == init_from) return first_model;
          return std::nullopt;
        };
        run.stages.push_back(make_stage(
            1, plan.follow_up_recipe, recipes::follow_up_overrides(plan, variant, seed, init_from),
            follow_up_name, follow_up_dir, first_stage));
      }
      runs.push_back(std::move(run));
    }
  }
  return runs;
}

std::vector<std::string> train_argv(const StagePlan& stage, const std::string& program_name) {
  std::vector<std::string> argv = {program_name, "train", stage.recipe_file.string()};
  for (const std::string& value : stage.overrides) {
    argv.push_back("--set");
    argv.push_back(value);
  }
  argv.push_back("--out");
  argv.push_back(stage.run_dir.string());
  argv.push_back("--resume");
  return argv;
}

std::string primary_metric(const recipes::Recipe& recipe) {
  if (recipe.model().kind() != recipes::Model::CLASSIFIER) return "ppl";
  const recipes::Train& train = recipe.train();
  if (train.has_best_metric()) {
    switch (train.best_metric()) {
      case recipes::Train::MCC:
        return "mcc";
      case recipes::Train::ACCURACY:
        return "accuracy";
      case recipes::Train::LOSS:
        return "loss";
    }
  }
  return recipe.data().corpus() == "cola" ? "mcc" : "accuracy";
}

bool primary_higher_is_better(const recipes::Recipe& recipe) {
  const std::string metric = primary_metric(recipe);
  return metric == "accuracy" || metric == "mcc";
}

std::vector<std::string> reported_metrics(const recipes::Recipe& recipe) {
  if (recipe.model().kind() == recipes::Model::CLASSIFIER) return {"loss", "accuracy", "mcc"};
  return {"loss", "ppl"};
}

std::string model_kind_name(const recipes::Recipe& recipe) {
  switch (recipe.model().kind()) {
    case recipes::Model::CAUSAL_LM:
      return "causal_lm";
    case recipes::Model::MASKED_LM:
      return "masked_lm";
    case recipes::Model::CLASSIFIER:
      return "classifier";
  }
  return "unknown";
}

}  // namespace rota::experiments
