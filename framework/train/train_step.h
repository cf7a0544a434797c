// One optimisation step: gradient accumulation, clipping, non-finite detection, schedule.
#pragma once

#include <functional>
#include <vector>

#include "framework/nn/module.h"
#include "framework/optim/optimizer.h"
#include "framework/optim/schedule.h"

namespace rota::train {

struct StepOptions {
  int64_t grad_accumulation = 1;  // micro-batches per optimizer step
  double clip_norm = 1.0;         // global grad-norm clip; 0 disables clipping
};

struct StepResult {
  int64_t step = 0;        // 1-based index of the optimizer step just taken
  double loss = 0.0;       // mean of the micro-batch losses
  double grad_norm = 0.0;  // global norm before clipping
  double lr = 0.0;         // learning rate used for this step
  int64_t tokens = 0;      // tokens consumed (as reported by the loss function)
};

/// A micro-batch's loss and how many tokens it covered.
struct MicroBatch {
  Variable loss;
  int64_t tokens = 0;
};

/// Thrown when the loss or the gradients stop being finite; the caller keeps the last good
/// checkpoint and stops with this message.
class NonFiniteError : public Error {
 public:
  using Error::Error;
};

/// Runs optimizer steps over `parameters`. For each step it calls `next_micro_batch`
/// grad_accumulation times, backpropagates loss / grad_accumulation each time (so the
/// gradients are the mean over micro-batches), clips, sets lr = schedule(step) and steps the
/// optimizer. Non-finite loss or gradient norm throws NonFiniteError before the parameters
/// change.
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
  optim::Optimizer& optimizer_;
  const optim::LrSchedule& schedule_;
  StepOptions options_;
  int64_t steps_done_ = 0;
};

}  // namespace rota::train
