// Rebuilding a trained task from a checkpoint (see checkpoint_task.h).
#include "app/tasks/checkpoint_task.h"

#include "app/setup/context_length.h"
#include "app/setup/tokenizer_setup.h"
#include "app/setup/trainer_setup.h"
#include "framework/io/checkpoint.h"
#include "framework/io/checkpoint_paths.h"
#include "recipes/loader.h"

namespace rota::app {

CheckpointTask load_checkpoint_task(const std::string& run_or_checkpoint, int64_t context,
                                    const std::function<void(recipes::Recipe& recipe)>& edit,
                                    const MemoryBudget& memory) {
  CheckpointTask result;
  result.checkpoint_dir = io::resolve_checkpoint(run_or_checkpoint);
  io::Checkpoint checkpoint = io::load_checkpoint(result.checkpoint_dir);
  TaskInputs inputs;
  inputs.recipe = recipes::load_recipe_text(checkpoint.recipe_text,
                                            (result.checkpoint_dir / io::kRecipeFile).string());
  if (context > 0) inputs.recipe = recipe_at_context(inputs.recipe, context);
  if (edit) edit(inputs.recipe);
  apply_thread_setting(inputs.recipe);
  inputs.tokenizer = obtain_tokenizer(inputs.recipe, result.checkpoint_dir, inputs.data_options);
  inputs.checkpoint = result.checkpoint_dir;
  inputs.inference = true;
  inputs.memory = memory;
  result.task = make_task(std::move(inputs));
  result.task->model().load_state_dict(checkpoint.model, /*strict=*/true);
  result.task->model().eval();
  result.state = checkpoint.state;
  return result;
}

}  // namespace rota::app
