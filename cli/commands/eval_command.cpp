// `rota eval RUN_OR_CHECKPOINT [--split S] [--context N]`: metrics of a checkpoint on a split.
#include <cstdio>

#include <fmt/format.h>

#include "cli/ablation/context_length.h"
#include "cli/commands/commands.h"
#include "cli/jobs/checkpoint_task.h"
#include "cli/jobs/precision_setup.h"
#include "cli/jobs/tokenizer_setup.h"
#include "framework/autograd/grad_mode.h"
#include "framework/io/checkpoint.h"
#include "framework/io/checkpoint_paths.h"
#include "framework/io/log.h"
#include "recipes/loader.h"

namespace rota::cli {

namespace {

/// load_checkpoint_task with the recipe changed to evaluate windows of `context` tokens (the
/// weights do not depend on the sequence length; recipe_at_context refuses where the model
/// cannot run at that length).
CheckpointTask load_checkpoint_task_at_context(const std::string& run_or_checkpoint,
                                               int64_t context) {
  CheckpointTask result;
  result.checkpoint_dir = io::resolve_checkpoint(run_or_checkpoint);
  io::Checkpoint checkpoint = io::load_checkpoint(result.checkpoint_dir);
  const recipes::Recipe trained = recipes::load_recipe_text(
      checkpoint.recipe_text, (result.checkpoint_dir / io::kRecipeFile).string());
  TaskInputs inputs;
  inputs.recipe = recipe_at_context(trained, context);
  apply_thread_setting(inputs.recipe);
  inputs.tokenizer = obtain_tokenizer(inputs.recipe, result.checkpoint_dir, inputs.data_options);
  result.task = make_task(std::move(inputs));
  result.task->model().load_state_dict(checkpoint.model, /*strict=*/true);
  result.task->model().eval();
  result.state = checkpoint.state;
  return result;
}

}  // namespace

int run_eval(const EvalArgs& args) {
  io::init_logging_from_env();
  CheckpointTask loaded = args.context > 0
                              ? load_checkpoint_task_at_context(args.checkpoint, args.context)
                              : load_checkpoint_task(args.checkpoint);
  // What is evaluated, as key=value pairs.
  io::log_info("eval: checkpoint={} step={} parameters={} sequence_length={} split={}",
               loaded.checkpoint_dir.string(), loaded.state.step(),
               loaded.task->model().num_parameters(),
               loaded.task->recipe().data().sequence_length(), args.split);
  // The precision the model was trained in (train.dtype), so evaluation sees the same numerics.
  const MatmulPrecisionGuard precision(precision_from_recipe(loaded.task->recipe()));
  report_precision(matmul_precision());
  train::Metrics metrics;
  {
    NoGradGuard no_grad;
    metrics = loaded.task->evaluate_split(args.split, args.batches);
  }
  std::string line = "split=" + args.split;
  for (const auto& [name, value] : metrics) line += fmt::format(" {}={:.6g}", name, value);
  line += fmt::format(" parameters={}", loaded.task->model().num_parameters());
  std::printf("%s\n", line.c_str());
  return kExitOk;
}

}  // namespace rota::cli
