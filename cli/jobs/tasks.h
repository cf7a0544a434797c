// The three recipe tasks: causal LM, masked LM and sequence classifier.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>

#include "cli/jobs/task.h"
#include "data/dataset/classification_dataset.h"
#include "data/dataset/lm_dataset.h"
#include "data/dataset/mlm_dataset.h"
#include "data/loader/batch_loader.h"
#include "models/language_models.h"

namespace rota::cli {

/// Next-token prediction on running text. Metrics: loss (nats/token over every target of the
/// split), ppl = exp(loss).
class CausalLmTask : public Task {
 public:
  explicit CausalLmTask(TaskInputs inputs);
  nn::Module& model() override { return *model_; }
  models::CausalLm& causal_lm() { return *model_; }
  train::MicroBatch next_micro_batch() override;
  train::Metrics evaluate_split(const std::string& split, int64_t max_batches) override;
  /// The token stream of a split (encoded once, cached).
  data::TokenStream split_tokens(const std::string& split);

 protected:
  int64_t prepare_training_data() override;

 private:
  std::shared_ptr<models::CausalLm> model_;
  std::map<std::string, data::TokenStream> streams_;
  std::optional<data::CausalLmDataset> train_data_;
};

/// Masked-token prediction (BERT corruption). Metrics: loss over the masked positions of the
/// split (corruption fixed by the seed, epoch 0), ppl.
class MaskedLmTask : public Task {
 public:
  explicit MaskedLmTask(TaskInputs inputs);
  nn::Module& model() override { return *model_; }
  train::MicroBatch next_micro_batch() override;
  train::Metrics evaluate_split(const std::string& split, int64_t max_batches) override;

 protected:
  int64_t prepare_training_data() override;

 private:
  data::MaskedLmDataset make_dataset(const std::string& split, data::WindowMode mode);

  std::shared_ptr<models::MaskedLm> model_;
  std::optional<data::MaskedLmDataset> train_data_;
};

/// Sequence classification on GLUE-style TSV. Metrics: loss (mean over examples), accuracy,
/// mcc (Matthews correlation).
class ClassifierTask : public Task {
 public:
  explicit ClassifierTask(TaskInputs inputs);
  nn::Module& model() override { return *model_; }
  models::Classifier& classifier() { return *model_; }
  train::MicroBatch next_micro_batch() override;
  train::Metrics evaluate_split(const std::string& split, int64_t max_batches) override;

 protected:
  int64_t prepare_training_data() override;

 private:
  data::ClassificationOptions dataset_options() const;

  std::shared_ptr<models::Classifier> model_;
  std::optional<data::ClassificationDataset> train_data_;
};

}  // namespace rota::cli
