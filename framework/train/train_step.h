// One optimisation step: gradient accumulation, clipping, non-finite detection, schedule.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "framework/distributed/communicator.h"
#include "framework/distributed/gradient_allreduce.h"
#include "framework/nn/module.h"
#include "framework/optim/optimizer.h"
#include "framework/optim/schedule.h"

namespace rota::train {

struct StepOptions {
  int64_t grad_accumulation = 1;  // micro-batches per optimizer step (on each rank)
  double clip_norm = 1.0;         // global grad-norm clip; 0 disables clipping
  /// The ranks of a data-parallel job; null (or a world of 1): this process alone.
  std::shared_ptr<distributed::Communicator> communicator{};
  /// Gradient bytes per allreduce call (data-parallel only).
  int64_t bucket_bytes = distributed::kDefaultBucketBytes;
};

struct StepResult {
  int64_t step = 0;        // 1-based index of the optimizer step just taken
  double loss = 0.0;       // mean of the micro-batch losses
  double grad_norm = 0.0;  // global norm before clipping
  double lr = 0.0;         // learning rate used for this step
  int64_t tokens = 0;      // tokens consumed (as reported by the loss function), all ranks
  double allreduce_s = 0;  // seconds spent in the gradient allreduce (0 for one process)
};

/// A micro-batch's loss and how many tokens it covered.
struct MicroBatch {
  Variable loss;
  int64_t tokens = 0;
};

/// Thrown when the loss or the gradients stop being finite; the caller keeps the last good
/// checkpoint and stops with this message. In a data-parallel job it is decided from reduced
/// values, so every rank throws it at the same step.
class NonFiniteError : public distributed::CollectiveError {
 public:
  explicit NonFiniteError(const std::string& message) : CollectiveError(message) {}
};

/// Runs optimizer steps over `parameters`. For each step it calls `next_micro_batch`
/// grad_accumulation times, backpropagates loss / grad_accumulation each time (so the
/// gradients are the mean over micro-batches), clips, sets lr = schedule(step) and steps the
/// optimizer. Non-finite loss or gradient norm throws NonFiniteError before the parameters
/// change.
///
/// Data-parallel (a communicator with W > 1 ranks): each rank runs its grad_accumulation
/// micro-batches and backpropagates loss / (grad_accumulation x W); the losses, token counts
/// and non-finite flags are then summed over the ranks, and the gradients too (bucketed, in rank
/// order: see GradientAllreduce), so every rank holds the same mean gradient, the same norm and
/// takes the same optimizer step. With grad_accumulation 1 the arithmetic is that of one process
/// running the W micro-batches with grad_accumulation W, bit for bit: rank r's backward is the
/// one of micro-batch r there, and the gradients are added in the same order.
class StepRunner {
 public:
  StepRunner(std::vector<Variable> parameters, optim::Optimizer& optimizer,
             const optim::LrSchedule& schedule, StepOptions options);
  StepResult run(const std::function<MicroBatch()>& next_micro_batch);
  /// Number of optimizer steps taken so far (restored on resume).
  int64_t steps_done() const { return steps_done_; }
  void set_steps_done(int64_t steps) { steps_done_ = steps; }

 private:
  std::vector<Variable> parameters_;
  std::optional<distributed::GradientAllreduce> gradients_;  // data-parallel only
  optim::Optimizer& optimizer_;
  const optim::LrSchedule& schedule_;
  StepOptions options_;
  int64_t steps_done_ = 0;
};

}  // namespace rota::train
