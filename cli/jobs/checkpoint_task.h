// Rebuilding a trained task from a checkpoint (for eval and generate).
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "cli/jobs/task.h"
#include "framework/io/train_state.h"

namespace rota::cli {

struct CheckpointTask {
  std::filesystem::path checkpoint_dir;
  io::TrainState state;
  std::unique_ptr<Task> task;  // model weights loaded, eval mode
};

/// Resolves a run or checkpoint directory, reads its recipe and tokenizer, builds the model
/// and loads the weights (strictly).
CheckpointTask load_checkpoint_task(const std::string& run_or_checkpoint);

/// Applies recipe.train.threads (0 keeps OpenMP's default) and returns the thread count.
int apply_thread_setting(const recipes::Recipe& recipe);

}  // namespace rota::cli
