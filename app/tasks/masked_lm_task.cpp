// Masked-LM task: corrupted windows, loss over the masked positions.
#include <cmath>

#include "app/setup/lora_setup.h"
#include "app/tasks/lm_evaluation.h"
#include "app/tasks/masked_lm_task.h"

#include "data/dataset/batch.h"
#include "data/dataset/documents.h"
#include "data/dataset/mlm_masking.h"
#include "framework/io/log.h"

namespace rota::app {

MaskedLmTask::MaskedLmTask(TaskInputs inputs) : Task(std::move(inputs)) {
  Generator init_gen(seeds_.init);
  model_ = std::make_shared<models::MaskedLm>(model_options_, init_gen, dropout_gen_);
  add_recipe_adapters(inputs_.recipe, *model_, init_gen, dropout_gen_);
}

data::MaskedLmDataset MaskedLmTask::make_dataset(const std::string& split, data::WindowMode mode) {
  const recipes::Masking& m = recipe().data().mlm();
  data::MlmOptions options;
  options.select_rate = m.probability();
  options.mask_rate = m.mask_fraction();
  options.random_rate = m.random_fraction();
  const data::TokenStream stream = source_.split(split);
  return data::MaskedLmDataset(stream, recipe().data().sequence_length(), mode,
                               data::MlmMasker(tokenizer(), options), seeds_.masking,
                               data::padding_id(tokenizer()));
}

int64_t MaskedLmTask::prepare_training_data() {
  if (!train_data_) {
    train_data_.emplace(make_dataset("train", data::WindowMode::kTrain));
    train_data_->set_sampling(training_window_sampling());
    ROTA_CHECK(train_data_->size() >= recipe().data().batch_size(),
               "data: the train split has {} windows, fewer than one batch of {}",
               train_data_->size(), recipe().data().batch_size());
    loader_.emplace(train_data_->size(), training_loader_options());
  }
  return train_data_->size();
}

train::MicroBatch MaskedLmTask::next_micro_batch() {
  prepare_training_data();
  const data::LoaderBatch indices = loader_->next();
  const data::LmBatch batch = packed(train_data_->batch(indices.indices, indices.epoch));
  // Every real token is read by the model; the loss covers the selected ones.
  const int64_t tokens = batch.tokens.numel();
  return {model_->loss(batch.tokens, batch.targets, batch.mask, batch.segment_ids), tokens};
}

TrainingBatch MaskedLmTask::next_training_batch() {
  prepare_training_data();
  const data::LoaderBatch indices = loader_->next();
  const data::LmBatch batch = packed(train_data_->batch(indices.indices, indices.epoch));
  return {batch.tokens, batch.targets, batch.mask, Tensor(), batch.segment_ids, indices.epoch};
}

data::LmBatch MaskedLmTask::packed(data::LmBatch batch) const {
  if (document_separator() >= 0) data::mark_masked_documents(batch, document_separator());
  return batch;
}

train::Metrics MaskedLmTask::evaluate_split(const std::string& split, int64_t max_batches) {
  const data::MaskedLmDataset dataset = make_dataset(split, data::WindowMode::kEval);
  data::BatchLoader loader(dataset.size(), evaluation_loader_options());
  const LmLossTotals totals = lm_loss_totals(
      communicator(), loader, max_batches,
      // Epoch 0: the same corruption at every evaluation, so numbers are comparable.
      [&](const std::vector<int64_t>& indices) {
        return packed(dataset.batch(indices, /*epoch=*/0));
      },
      [&](const data::LmBatch& batch) {
        check_batch_memory(batch.tokens);
        return model_->loss(batch.tokens, batch.targets, batch.mask, batch.segment_ids).item();
      });
  const int64_t targets = totals.targets;
  ROTA_CHECK(targets > 0, "eval: no masked positions in the {} split", split);
  const double loss = totals.loss_sum / static_cast<double>(targets);
  return {{"loss", loss}, {"ppl", std::exp(loss)}, {"masked_tokens", static_cast<double>(targets)}};
}

std::vector<EvalBatch> MaskedLmTask::evaluation_batches(const std::string& split,
                                                        int64_t max_batches) {
  if (document_separator() >= 0) throw packed_batches_refusal();
  const data::MaskedLmDataset dataset = make_dataset(split, data::WindowMode::kEval);
  data::BatchLoader loader(dataset.size(), evaluation_loader_options());
  std::vector<EvalBatch> batches;
  for (int64_t b = 0; b < evaluation_batch_count(loader, max_batches); ++b) {
    // Epoch 0, as evaluate_split.
    const data::LmBatch batch = dataset.batch(loader.next().indices, /*epoch=*/0);
    if (batch.target_count == 0) continue;  // lm_loss_totals skips it too
    batches.push_back({batch.tokens, batch.targets, batch.mask, Tensor()});
  }
  return batches;
}

}  // namespace rota::app
