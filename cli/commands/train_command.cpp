// `rota train RECIPE [--set a.b=v]... [--out DIR] [--resume]`: a recipe → a trained run directory.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sstream>

#include <fmt/format.h>

#include "cli/commands/commands.h"
#include "cli/jobs/checkpoint_task.h"
#include "cli/jobs/finetune_setup.h"
#include "cli/jobs/optimizer_setup.h"
#include "cli/jobs/tasks.h"
#include "cli/jobs/tokenizer_setup.h"
#include "framework/io/atomic_file.h"
#include "framework/io/checkpoint.h"
#include "framework/io/checkpoint_paths.h"
#include "framework/io/log.h"
#include "models/generation.h"
#include "recipes/loader.h"
#include "recipes/recipe_error.h"

namespace fs = std::filesystem;

namespace rota::cli {
namespace {

// The first line where two recipe texts differ, for the resume mismatch message.
std::string first_difference(const std::string& a, const std::string& b) {
  std::istringstream sa(a), sb(b);
  std::string la, lb;
  int line = 0;
  while (true) {
    const bool more_a = static_cast<bool>(std::getline(sa, la));
    const bool more_b = static_cast<bool>(std::getline(sb, lb));
    ++line;
    if (!more_a && !more_b) return "";
    if (!more_a) la = "(end)";
    if (!more_b) lb = "(end)";
    if (la != lb) return fmt::format("line {}: checkpoint has `{}`, now `{}`", line, la, lb);
  }
}

train::TrainerOptions trainer_options(const recipes::Recipe& recipe, const fs::path& run_dir,
                                      int64_t total_steps, const std::string& recipe_text) {
  const recipes::Train& t = recipe.train();
  train::TrainerOptions o;
  o.run_dir = run_dir;
  o.total_steps = total_steps;
  o.eval_every = t.eval_every();
  o.checkpoint_every = t.checkpoint_every();
  o.keep_checkpoints = t.keep_checkpoints();
  o.log_every = t.log_every();
  o.step.grad_accumulation = t.gradient_accumulation();
  o.step.clip_norm = t.grad_clip();
  o.tensorboard = t.tensorboard();
  o.recipe_text = recipe_text;
  o.seed = t.seed();
  recipes::Train::Metric metric = t.best_metric();
  if (!t.has_best_metric()) {
    const bool classifier = recipe.model().kind() == recipes::Model::CLASSIFIER;
    metric = !classifier                        ? recipes::Train::LOSS
             : recipe.data().corpus() == "cola" ? recipes::Train::MCC
                                                : recipes::Train::ACCURACY;
  }
  o.best_metric = metric == recipes::Train::LOSS  ? "loss"
                  : metric == recipes::Train::MCC ? "mcc"
                                                  : "accuracy";
  o.higher_is_better = metric != recipes::Train::LOSS;
  return o;
}

void print_sample(const recipes::Recipe& recipe, Task& task) {
  auto* causal = dynamic_cast<CausalLmTask*>(&task);
  if (!causal || !recipe.train().has_sample()) return;
  const recipes::Sample& s = recipe.train().sample();
  models::GenerationOptions options;
  options.tokens = s.tokens();
  options.temperature = s.temperature();
  options.top_k = s.top_k();
  options.seed = recipe.train().seed();
  causal->model().eval();
  const std::vector<int64_t> prompt = task.tokenizer().encode(s.prompt());
  // Line-based tokenizers end every encoded line with <eos>; a prompt is a line being written.
  std::vector<int64_t> ids = prompt;
  const auto& specials = task.tokenizer().specials();
  if (!ids.empty() && specials.has(data::SpecialToken::kEos) &&
      ids.back() == specials.id(data::SpecialToken::kEos) && ids.size() > 1) {
    ids.pop_back();
  }
  const std::vector<int64_t> generated = models::generate(causal->causal_lm(), ids, options);
  std::vector<int64_t> all = ids;
  all.insert(all.end(), generated.begin(), generated.end());
  std::printf("---- sample (temperature %.2g, top-k %lld, seed %llu) ----\n%s\n----\n",
              s.temperature(), static_cast<long long>(s.top_k()),
              static_cast<unsigned long long>(recipe.train().seed()),
              task.tokenizer().decode(all).c_str());
  std::fflush(stdout);
}

}  // namespace

int run_train(const TrainArgs& args) {
  io::init_logging_from_env();
  recipes::Recipe recipe = recipes::load_recipe(args.recipe, args.overrides);
  if (recipe.train().dtype() != recipes::Train::F32) {
    throw recipes::RecipeError(
        "train.dtype: BF16 training is not available in this build yet (see docs/performance.md); "
        "use F32");
  }
  const int threads = apply_thread_setting(recipe);
  const fs::path run_dir = args.out.empty() ? fs::path("runs") / recipe.name() : fs::path(args.out);
  const std::string recipe_text = recipes::format_recipe(recipe);

  std::optional<fs::path> latest = fs::exists(run_dir) ? io::find_latest(run_dir) : std::nullopt;
  if (latest && !args.resume) {
    throw recipes::RecipeError(fmt::format(
        "{} already holds a run (latest checkpoint {}); pass --resume to continue it, or --out "
        "DIR to start a new run elsewhere",
        run_dir.string(), latest->string()));
  }
  if (latest) {
    const io::Checkpoint saved = io::load_checkpoint(*latest);
    if (saved.recipe_text != recipe_text) {
      throw recipes::RecipeError(fmt::format(
          "--resume: the recipe differs from the one {} was trained with ({}); resume with the "
          "same recipe and --set overrides",
          latest->string(), first_difference(saved.recipe_text, recipe_text)));
    }
  } else if (args.resume) {
    io::log_info("--resume: {} has no checkpoint yet; starting from scratch", run_dir.string());
  }

  fs::create_directories(run_dir);
  io::set_log_file(run_dir / "train.log");
  io::log_info("rota train {} -> {} ({} threads)", args.recipe, run_dir.string(), threads);

  TaskInputs inputs;
  inputs.recipe = recipe;
  inputs.tokenizer = obtain_tokenizer(recipe, latest, inputs.data_options);
  std::unique_ptr<Task> task = make_task(std::move(inputs));
  nn::Module& model = task->model();
  if (latest) {
    // Weights come from the checkpoint; only the frozen set must be re-applied.
    if (recipe.has_finetune() && recipe.finetune().freeze_size() > 0) {
      freeze_parameters(model,
                        {recipe.finetune().freeze().begin(), recipe.finetune().freeze().end()});
    }
  } else {
    apply_finetune(recipe, model);
  }
  io::write_file_atomically(run_dir / io::kRecipeFile, recipe_text);
  task->tokenizer().save(run_dir / "tokenizer");

  const int64_t total_steps =
      total_steps_from_recipe(recipe, recipe.train().has_epochs() ? task->steps_per_epoch() : 1);
  const std::unique_ptr<optim::Optimizer> optimizer = optimizer_from_recipe(recipe, model);
  const std::unique_ptr<optim::LrSchedule> schedule =
      optim::make_schedule(schedule_options_from_recipe(recipe, total_steps));
  int64_t trainable = 0;
  for (const auto& p : model.parameters()) trainable += p.requires_grad() ? p.data().numel() : 0;
  io::log_info(
      "model: {} parameters ({} trainable); vocabulary {}; {} steps of {} sequences x {} tokens",
      model.num_parameters(), trainable, task->tokenizer().vocab_size(), total_steps,
      recipe.data().batch_size(), recipe.data().sequence_length());

  train::TrainerOptions options = trainer_options(recipe, run_dir, total_steps, recipe_text);
  options.stop_after_step = args.stop_after;
  train::Trainer trainer(*task, *optimizer, *schedule, options);
  if (latest) trainer.resume(*latest);
  const train::TrainOutcome outcome = trainer.run();
  if (outcome.status == train::TrainStatus::kInterrupted) {
    std::string again = "rota train " + args.recipe;
    for (const std::string& o : args.overrides) again += " --set '" + o + "'";
    if (!args.out.empty()) again += " --out " + args.out;
    std::printf("stopped at step %lld/%lld; checkpoint %s; continue with: %s --resume\n",
                static_cast<long long>(outcome.step), static_cast<long long>(total_steps),
                outcome.last_checkpoint.c_str(), again.c_str());
    return outcome.signal != 0 ? kExitFailure : kExitOk;
  }
  print_sample(recipe, *task);
  std::string line = "split=valid";
  for (const auto& [name, value] : outcome.final_metrics)
    line += fmt::format(" {}={:.6g}", name, value);
  std::printf("%s step=%lld run=%s\n", line.c_str(), static_cast<long long>(outcome.step),
              run_dir.c_str());
  return kExitOk;
}

}  // namespace rota::cli
