// Rebuilding a trained task from a checkpoint (see checkpoint_task.h).
#include "app/tasks/checkpoint_task.h"

#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "app/setup/context_length.h"
#include "app/setup/tokenizer_setup.h"
#include "app/setup/trainer_setup.h"
#include "framework/io/checkpoint.h"
#include "framework/io/checkpoint_paths.h"
#include "recipes/field_differences.h"
#include "recipes/loader.h"
#include "recipes/recipe_error.h"

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
  const recipes::Model as_trained = inputs.recipe.model();
  if (edit) edit(inputs.recipe);
  const recipes::Model as_asked = inputs.recipe.model();
  apply_thread_setting(inputs.recipe);
  inputs.tokenizer = obtain_tokenizer(inputs.recipe, result.checkpoint_dir, inputs.data_options);
  inputs.checkpoint = result.checkpoint_dir;
  inputs.inference = true;
  inputs.memory = memory;
  result.task = make_task(std::move(inputs));
  try {
    result.task->model().load_state_dict(checkpoint.model, /*strict=*/true);
  } catch (const Error& e) {
    // A model field changed by --set (model.layers, model.width, …) gives a model the trained
    // tensors cannot fill: name the fields rather than every tensor that disagrees.
    const std::vector<std::string> changed = recipes::field_differences(
        as_trained, as_asked, "model.", 8, "checkpoint only", "recipe only");
    if (changed.empty()) throw;
    // The load's first complaint: "load_state_dict: N problem(s):\n  'name': ...".
    const std::string complaint = e.what();
    const size_t first_line = complaint.find('\n');
    std::string first_problem =
        first_line == std::string::npos ? complaint : complaint.substr(first_line + 1);
    first_problem = first_problem.substr(0, first_problem.find('\n'));
    first_problem.erase(0, first_problem.find_first_not_of(" -"));
    throw recipes::RecipeError(fmt::format(
        "the checkpoint {} holds a model of another shape than the recipe asks for: the model "
        "it was trained as differs in {}; a trained model keeps its shape, so leave these "
        "model fields out of --set (the checkpoint's own recipe is {}); first of the tensors that "
        "disagree: {}",
        result.checkpoint_dir.string(), fmt::join(changed, ", "),
        (result.checkpoint_dir / io::kRecipeFile).string(), first_problem));
  }
  result.task->model().eval();
  result.state = checkpoint.state;
  return result;
}

}  // namespace rota::app
