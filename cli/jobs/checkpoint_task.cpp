// Rebuilding a trained task from a checkpoint (see checkpoint_task.h).
#include "cli/jobs/checkpoint_task.h"

#include "cli/jobs/tokenizer_setup.h"
#include "framework/backend/parallel.h"
#include "framework/io/checkpoint.h"
#include "framework/io/checkpoint_paths.h"
#include "recipes/loader.h"

namespace rota::cli {

int apply_thread_setting(const recipes::Recipe& recipe) {
  int threads = backend::init_runtime();
  if (recipe.train().threads() > 0) {
    backend::set_num_threads(recipe.train().threads());
    threads = recipe.train().threads();
  }
  return threads;
}

CheckpointTask load_checkpoint_task(const std::string& run_or_checkpoint) {
  CheckpointTask result;
  result.checkpoint_dir = io::resolve_checkpoint(run_or_checkpoint);
  io::Checkpoint checkpoint = io::load_checkpoint(result.checkpoint_dir);
  TaskInputs inputs;
  inputs.recipe = recipes::load_recipe_text(checkpoint.recipe_text,
                                            (result.checkpoint_dir / io::kRecipeFile).string());
  apply_thread_setting(inputs.recipe);
  inputs.tokenizer = obtain_tokenizer(inputs.recipe, result.checkpoint_dir, inputs.data_options);
  result.task = make_task(std::move(inputs));
  result.task->model().load_state_dict(checkpoint.model, /*strict=*/true);
  result.task->model().eval();
  result.state = checkpoint.state;
  return result;
}

}  // namespace rota::cli
