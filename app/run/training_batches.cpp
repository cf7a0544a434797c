// Training batches without training (see training_batches.h).
#include "app/run/training_batches.h"

#include <fmt/format.h>

#include "app/setup/finetune_setup.h"
#include "app/setup/schedule_setup.h"
#include "app/setup/tokenizer_setup.h"
#include "app/setup/trainer_setup.h"
#include "framework/base/file_io.h"
#include "framework/io/checkpoint.h"
#include "framework/io/checkpoint_paths.h"
#include "framework/io/train_state.h"
#include "recipes/loader.h"
#include "recipes/recipe_error.h"

namespace rota::app {

namespace fs = std::filesystem;

TrainingBatches::TrainingBatches(const TrainingBatchesRequest& request) {
  const recipes::Recipe recipe =
      request.recipe_text.empty()
          ? recipes::load_recipe(request.recipe, request.overrides, pretrained_model)
          : recipes::load_recipe_text(request.recipe_text, request.recipe, request.overrides,
                                      pretrained_model);
  apply_thread_setting(recipe);
  std::optional<fs::path> checkpoint;
  if (!request.resume_from.empty()) checkpoint = io::resolve_checkpoint(request.resume_from);
  TaskInputs inputs;
  inputs.recipe = recipe;
  inputs.tokenizer = obtain_tokenizer(recipe, checkpoint, inputs.data_options);
  inputs.checkpoint = checkpoint;
  inputs.inference = true;  // the model is built but neither trained nor read
  task_ = make_task(std::move(inputs));
  accumulation_ = recipe.train().gradient_accumulation();
  total_ =
      total_steps_from_recipe(recipe, recipe.train().has_epochs() ? task_->steps_per_epoch() : 1) *
      accumulation_;
  if (checkpoint) {
    const fs::path file = *checkpoint / io::kStateFile;
    const io::TrainState state = io::decode_train_state(read_file(file), file.string());
    task_->restore_state(state);
    drawn_ = state.step() * accumulation_;
  }
}

TrainingBatches::~TrainingBatches() = default;

TrainingBatch TrainingBatches::next() {
  ROTA_CHECK(!done(), "training batches: all {} micro-batches of the run have been drawn", total_);
  TrainingBatch batch = task_->next_training_batch();
  ++drawn_;
  return batch;
}

TrainingBatchesState TrainingBatches::state() const {
  io::TrainState state;
  task_->save_state(state);
  return {drawn_, io::encode_train_state(state)};
}

void TrainingBatches::restore(const TrainingBatchesState& state) {
  const io::TrainState decoded = io::decode_train_state(state.cursor, "the batches' state");
  task_->restore_state(decoded);
  drawn_ = state.micro_batches;
}

}  // namespace rota::app
