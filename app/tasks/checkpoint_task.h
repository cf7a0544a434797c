// Rebuilding a trained task from a checkpoint (for eval and generate).
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include "app/tasks/task.h"
#include "framework/io/train_state.h"

namespace rota::app {

struct CheckpointTask {
  std::filesystem::path checkpoint_dir;
  io::TrainState state;
  std::unique_ptr<Task> task;  // model weights loaded, eval mode
};

/// Resolves a run or checkpoint directory, reads its recipe and tokenizer, builds the model
/// and loads the weights (strictly). context > 0: the recipe is changed to evaluate windows of
/// that many tokens (recipe_at_context; the weights do not depend on the sequence length, and
/// it refuses where the model cannot run at that length).
/// `edit`, when set, changes the recipe after that (e.g. another data source) before the task is
/// built. `memory` bounds what evaluating with it may use (the default: the memory available).
CheckpointTask load_checkpoint_task(const std::string& run_or_checkpoint, int64_t context = 0,
                                    const std::function<void(recipes::Recipe& recipe)>& edit = {},
                                    const MemoryBudget& memory = {});

}  // namespace rota::app
