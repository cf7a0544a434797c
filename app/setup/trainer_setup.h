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

/// Applies train.threads (0 keeps OpenMP's default) and returns the thread count.
int apply_thread_setting(const recipes::Recipe& recipe);

}  // namespace rota::app
