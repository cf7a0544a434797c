// Translating a recipe's `train` section: the trainer's options and the thread count.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "framework/train/trainer.h"
#include "recipes/recipe.pb.h"

namespace rota::app {

/// The loop's cadence, clipping, accumulation and best-checkpoint metric (train.best_metric,
/// or by default loss for language models, MCC on CoLA and accuracy for other classifiers).
train::TrainerOptions trainer_options_from_recipe(const recipes::Recipe& recipe,
                                                  const std::filesystem::path& run_dir,
                                                  int64_t total_steps,
                                                  const std::string& recipe_text);

/// Sets the OpenMP thread count of this thread to train.threads, or when that is 0 to
/// backend::default_num_threads() (OMP_NUM_THREADS, else every core the process may use),
/// whatever another library set before; returns it.
int apply_thread_setting(const recipes::Recipe& recipe);

}  // namespace rota::app
