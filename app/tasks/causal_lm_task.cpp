// Causal LM task: token-stream windows, next-token loss, perplexity over a whole split.
#include "app/tasks/causal_lm_task.h"

#include <cmath>

#include <fmt/format.h>

#include "app/tasks/lm_evaluation.h"
#include "data/dataset/batch.h"
#include "framework/distributed/sharded_sums.h"
#include "framework/io/log.h"
#include "recipes/recipe_error.h"

namespace rota::app {

CausalLmTask::CausalLmTask(TaskInputs inputs) : Task(std::move(inputs)) {
  Generator init_gen(seeds_.init);
  model_ = std::make_shared<models::CausalLm>(model_options_, init_gen, dropout_gen_);
}

data::TokenStream CausalLmTask::split_tokens(const std::string& split) {
  return source_.split(split, /*min_tokens=*/2);
}

int64_t CausalLmTask::prepare_training_data() {
  if (!train_data_) {
    const int64_t seq_len = recipe().data().sequence_length();
    train_data_.emplace(split_tokens("train"), seq_len, data::WindowMode::kTrain,
                        data::padding_id(tokenizer()));
    train_data_->set_sampling(training_window_sampling());
    ROTA_CHECK(train_data_->size() >= recipe().data().batch_size(),
               "data: the train split has {} windows of {} tokens, fewer than one batch of {}",
               train_data_->size(), seq_len, recipe().data().batch_size());
    loader_.emplace(train_data_->size(), training_loader_options());
  }
  return train_data_->size();
}

train::MicroBatch CausalLmTask::next_micro_batch() {
  prepare_training_data();
  const data::LoaderBatch indices = loader_->next();
  const data::LmBatch batch = train_data_->batch(indices.indices, indices.epoch);
  return {model_->loss(batch.tokens, batch.targets), batch.target_count};
}

void CausalLmTask::set_evaluation_stride(int64_t stride) {
  const int64_t length = recipe().data().sequence_length();
  if (stride < 0 || stride > length) {
    throw recipes::RecipeError(fmt::format(
        "--stride {}: must be in [1, {}], the evaluation window (--context or the recipe's "
        "data.sequence_length)",
        stride, length));
  }
  evaluation_stride_ = stride;
}

data::CausalLmDataset CausalLmTask::eval_dataset(const std::string& split) {
  return data::CausalLmDataset(split_tokens(split), recipe().data().sequence_length(),
                               data::WindowMode::kEval, data::padding_id(tokenizer()),
                               evaluation_stride_);
}

train::Metrics CausalLmTask::evaluate_split(const std::string& split, int64_t max_batches) {
  const data::CausalLmDataset dataset = eval_dataset(split);
  data::BatchLoader loader(dataset.size(), evaluation_loader_options());
  const LmLossTotals totals = lm_loss_totals(
      communicator(), loader, max_batches,
      [&](const std::vector<int64_t>& indices) { return dataset.batch(indices); },
      [&](const data::LmBatch& batch) {
        check_batch_memory(batch.tokens);
        return model_->loss(batch.tokens, batch.targets).item();
      });
  const int64_t targets = totals.targets;
  ROTA_CHECK(targets > 0, "eval: the {} split has no targets", split);
  const double loss = totals.loss_sum / static_cast<double>(targets);
  return {{"loss", loss}, {"ppl", std::exp(loss)}, {"tokens", static_cast<double>(targets)}};
}

std::vector<PositionBucket> CausalLmTask::evaluate_by_position(const std::string& split,
                                                               int64_t max_batches) {
  const data::CausalLmDataset dataset = eval_dataset(split);
  data::BatchLoader loader(dataset.size(), evaluation_loader_options());
  std::vector<PositionBucket> buckets = position_buckets(dataset.seq_len());
  const auto count = static_cast<int64_t>(buckets.size());
  const int64_t batches = evaluation_batch_count(loader, max_batches);
  // Batch b on rank b % ranks; per bucket the loss sum and the token count, added in batch
  // order (as evaluate_split, so the totals do not depend on the number of ranks).
  distributed::ShardedSums sums(communicator(), batches, count, count);
  for (int64_t b = 0; b < batches; ++b) {
    const std::vector<int64_t> indices = loader.next().indices;
    if (!sums.mine(b)) continue;
    const data::LmBatch batch = dataset.batch(indices);
    check_batch_memory(batch.tokens);
    const Tensor losses = model_->token_losses(batch.tokens, batch.targets).to(DType::kF64);
    const Tensor targets = batch.targets.contiguous();
    const double* loss = losses.data<double>();
    const int64_t* target = targets.data<int64_t>();
    std::vector<double> loss_sums(count, 0.0);
    std::vector<int64_t> tokens(count, 0);
    const int64_t rows = batch.tokens.size(0), width = batch.tokens.size(1);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t t = 0; t < width; ++t) {
        if (target[r * width + t] == data::kIgnoreIndex) continue;  // padding, or context
        const int64_t k = bucket_of(t + 1);
        loss_sums[k] += loss[r * width + t];
        ++tokens[k];
      }
    }
    sums.set(b, loss_sums, tokens);
  }
  const distributed::ShardedSums::Totals totals = sums.totals();
  for (int64_t k = 0; k < count; ++k) {
    buckets[k].loss_sum = totals.doubles[k];
    buckets[k].tokens = totals.ints[k];
  }
  return buckets;
}

std::vector<EvalBatch> CausalLmTask::evaluation_batches(const std::string& split,
                                                        int64_t max_batches) {
  const data::CausalLmDataset dataset = eval_dataset(split);
  data::BatchLoader loader(dataset.size(), evaluation_loader_options());
  std::vector<EvalBatch> batches;
  for (int64_t b = 0; b < evaluation_batch_count(loader, max_batches); ++b) {
    const data::LmBatch batch = dataset.batch(loader.next().indices);
    if (batch.target_count == 0) continue;  // lm_loss_totals skips it too
    batches.push_back({batch.tokens, batch.targets, Tensor(), Tensor()});
  }
  return batches;
}

}  // namespace rota::app
