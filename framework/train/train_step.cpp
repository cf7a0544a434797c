// Optimisation step with accumulation and clipping.
#include "framework/train/train_step.h"

#include <cmath>

#include "framework/autograd/ops/elementwise.h"
#include "framework/optim/clip.h"

namespace rota::train {

StepRunner::StepRunner(std::vector<Variable> parameters, optim::Optimizer& optimizer,
                       const optim::LrSchedule& schedule, StepOptions options)
    : parameters_(std::move(parameters)),
      optimizer_(optimizer),
      schedule_(schedule),
      options_(options) {
  ROTA_CHECK(options.grad_accumulation >= 1, "train: grad_accumulation must be >= 1, got {}",
             options.grad_accumulation);
  ROTA_CHECK(options.clip_norm >= 0, "train: clip_norm must be >= 0, got {}", options.clip_norm);
}

StepResult StepRunner::run(const std::function<MicroBatch()>& next_micro_batch) {
  StepResult result;
  result.step = steps_done_ + 1;
  for (const Variable& p : parameters_) Variable(p).zero_grad();
  const double scale = 1.0 / static_cast<double>(options_.grad_accumulation);
  for (int64_t micro = 0; micro < options_.grad_accumulation; ++micro) {
    MicroBatch batch = next_micro_batch();
    const double loss = batch.loss.item();
    if (!std::isfinite(loss)) {
      throw NonFiniteError(fmt::format("train: loss became {} at step {} (micro-batch {})", loss,
                                       result.step, micro + 1));
    }
    result.loss += loss * scale;
    result.tokens += batch.tokens;
    (options_.grad_accumulation == 1 ? batch.loss : batch.loss * scale).backward();
  }
  result.grad_norm = options_.clip_norm > 0 ? optim::clip_grad_norm(parameters_, options_.clip_norm)
                                            : optim::grad_norm(parameters_);
  if (!std::isfinite(result.grad_norm)) {
    throw NonFiniteError(
        fmt::format("train: gradient norm became {} at step {}", result.grad_norm, result.step));
  }
  result.lr = schedule_.lr(result.step);
  optimizer_.set_lr(result.lr);
  optimizer_.step();
  steps_done_ = result.step;
  return result;
}

}  // namespace rota::train
