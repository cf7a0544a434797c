// Optimisation step with accumulation, clipping and (data-parallel) gradient reduction.
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
      options_(std::move(options)) {
  ROTA_CHECK(options_.grad_accumulation >= 1, "train: grad_accumulation must be >= 1, got {}",
             options_.grad_accumulation);
  ROTA_CHECK(options_.clip_norm >= 0, "train: clip_norm must be >= 0, got {}", options_.clip_norm);
  if (options_.communicator && options_.communicator->world_size() > 1) {
    gradients_.emplace(*options_.communicator, parameters_, options_.bucket_bytes);
  }
}

StepResult StepRunner::run(const std::function<MicroBatch()>& next_micro_batch) {
  StepResult result;
  result.step = steps_done_ + 1;
  for (const Variable& p : parameters_) Variable(p).zero_grad();
  const int64_t world = gradients_ ? options_.communicator->world_size() : 1;
  const int64_t micro_batches = options_.grad_accumulation * world;  // over all ranks
  const double scale = 1.0 / static_cast<double>(micro_batches);
  int64_t non_finite_micro = 0;  // 1-based index of this rank's first non-finite loss
  double non_finite_loss = 0;
  for (int64_t micro = 0; micro < options_.grad_accumulation; ++micro) {
    MicroBatch batch = next_micro_batch();
    const double loss = batch.loss.item();
    if (!std::isfinite(loss)) {
      if (world == 1) {
        throw NonFiniteError(fmt::format("train: loss became {} at step {} (micro-batch {})", loss,
                                         result.step, micro + 1));
      }
      // The other ranks are computing their micro-batches: tell them after the loop.
      non_finite_micro = micro + 1;
      non_finite_loss = loss;
      break;
    }
    result.loss += loss * scale;
    result.tokens += batch.tokens;
    (micro_batches == 1 ? batch.loss : batch.loss * scale).backward();
  }
  if (gradients_) {
    // One small reduction for the scalars: [loss, per-rank non-finite loss] and [tokens,
    // per-rank non-finite micro-batch, per-parameter ranks with a gradient].
    const int rank = options_.communicator->rank();
    std::vector<double> losses(static_cast<size_t>(1 + world), 0.0);
    losses[0] = result.loss;
    losses[1 + rank] = non_finite_loss;
    std::vector<int64_t> counts(static_cast<size_t>(1 + world), 0);
    counts[0] = result.tokens;
    counts[1 + rank] = non_finite_micro;
    const std::vector<int64_t> flags = gradients_->local_gradient_flags();
    counts.insert(counts.end(), flags.begin(), flags.end());
    options_.communicator->allreduce_sum(std::span<double>(losses));
    options_.communicator->allreduce_sum(std::span<int64_t>(counts));
    for (int r = 0; r < world; ++r) {
      if (counts[1 + r] != 0) {
        throw NonFiniteError(
            fmt::format("train: loss became {} at step {} (rank {}, micro-batch {})", losses[1 + r],
                        result.step, r, counts[1 + r]));
      }
    }
    result.loss = losses[0];
    result.tokens = counts[0];
    gradients_->sum(std::span<const int64_t>(counts).subspan(static_cast<size_t>(1 + world)));
    result.allreduce_s = gradients_->last_allreduce_seconds();
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
