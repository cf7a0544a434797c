// Reading a finished training run directory: steps, wall time, throughput, best evaluation, curve.
#pragma once

#include <filesystem>
#include <string>

#include "experiments/run_result.h"
#include "recipes/recipe.pb.h"

namespace rota::experiments {

/// Fills stage.steps, train_time_s (the latest checkpoint's training wall time, summed over
/// resumes), tokens_per_s (median of metrics.jsonl's training windows, so evaluation pauses do
/// not count), best_valid_step and best_valid (the evaluation that picked checkpoints/best, as
/// the train state records it, with the metrics.jsonl line of that step) and curve (the primary
/// metric of every evaluation). Throws rota::Error when the run has no checkpoint.
void read_training_facts(const std::filesystem::path& run_dir, StageResult& stage);

/// The split the test evaluation uses: "test" when the corpus has a test split with labels,
/// else "valid" (e.g. GLUE tasks whose test labels are hidden, or a corpus without test).
std::string evaluation_split(const recipes::Recipe& recipe);

}  // namespace rota::experiments
