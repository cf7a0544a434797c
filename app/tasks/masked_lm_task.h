// Masked-token prediction task: a masked LM with BERT corruption.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "app/tasks/lm_token_source.h"
#include "app/tasks/task.h"
#include "data/dataset/mlm_dataset.h"
#include "models/language_models.h"

namespace rota::app {

/// Masked-token prediction (BERT corruption). Metrics: loss over the masked positions of the
/// split (corruption fixed by the seed, epoch 0), ppl.
class MaskedLmTask : public Task {
 public:
  explicit MaskedLmTask(TaskInputs inputs);
  nn::Module& model() override { return *model_; }
  models::MaskedLm& masked_lm() { return *model_; }
  train::MicroBatch next_micro_batch() override;
  TrainingBatch next_training_batch() override;
  train::Metrics evaluate_split(const std::string& split, int64_t max_batches) override;
  std::vector<EvalBatch> evaluation_batches(const std::string& split, int64_t max_batches) override;

 protected:
  int64_t prepare_training_data() override;

 private:
  data::MaskedLmDataset make_dataset(const std::string& split, data::WindowMode mode);
  /// The batch with its documents marked (data.document_separator), or as it is.
  data::LmBatch packed(data::LmBatch batch) const;

  std::shared_ptr<models::MaskedLm> model_;
  std::optional<data::MaskedLmDataset> train_data_;
  LmTokenSource source_{*this};
};

}  // namespace rota::app
