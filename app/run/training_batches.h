// A recipe's training batches as `rota train` draws them, without training: Rota's data
// pipeline for another framework's loop (Python's rota.training_batches).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "app/tasks/task.h"

namespace rota::app {

struct TrainingBatchesRequest {
  std::string recipe;                  // the recipe file (with recipe_text: the name messages use)
  std::string recipe_text;             // the recipe's text instead of a file; empty: read `recipe`
  std::vector<std::string> overrides;  // --set / --unset, as for rota train
  /// A run or checkpoint directory (checkpoints/latest of a run) whose data cursor to continue
  /// from, as `rota train --resume` does; its tokenizer is used. Empty: from the start.
  std::string resume_from;
};

/// Where a TrainingBatches stands: the micro-batches drawn and the task's cursor (an encoded
/// TrainState). Restoring it in a TrainingBatches of the same recipe continues the sequence.
struct TrainingBatchesState {
  int64_t micro_batches = 0;
  std::string cursor;
};

/// The micro-batches of a training run in the order `rota train` draws them (one process):
/// the same windows, shuffling, masking and epochs. The task is built as for inference (its
/// model's weights are not trained or read).
class TrainingBatches {
 public:
  explicit TrainingBatches(const TrainingBatchesRequest& request);
  ~TrainingBatches();

  /// Micro-batches of the whole run: its optimizer steps × train.gradient_accumulation.
  int64_t total() const { return total_; }
  /// Micro-batches drawn so far (including those before the run or state resumed from).
  int64_t drawn() const { return drawn_; }
  bool done() const { return drawn_ >= total_; }
  int64_t micro_batches_per_step() const { return accumulation_; }
  /// The next micro-batch; throws once all total() have been drawn.
  TrainingBatch next();
  TrainingBatchesState state() const;
  /// Continues from `state` (taken from a TrainingBatches of the same recipe).
  void restore(const TrainingBatchesState& state);
  Task& task() { return *task_; }

 private:
  std::unique_ptr<Task> task_;
  int64_t total_ = 0;
  int64_t accumulation_ = 1;
  int64_t drawn_ = 0;
};

}  // namespace rota::app
