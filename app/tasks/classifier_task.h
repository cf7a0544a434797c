// Sequence classification task: a classifier on labelled text.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "app/tasks/task.h"
#include "data/dataset/classification_dataset.h"
#include "models/language_models.h"

namespace rota::app {

/// Sequence classification on GLUE-style TSV. Metrics: loss (mean over examples), accuracy,
/// mcc (Matthews correlation).
class ClassifierTask : public Task {
 public:
  explicit ClassifierTask(TaskInputs inputs);
  nn::Module& model() override { return *model_; }
  models::Classifier& classifier() { return *model_; }
  /// The name of each class id, in id order (the label text of the data).
  std::vector<std::string> label_names() const;
  train::MicroBatch next_micro_batch() override;
  train::Metrics evaluate_split(const std::string& split, int64_t max_batches) override;

 protected:
  int64_t prepare_training_data() override;

 private:
  data::ClassificationOptions dataset_options() const;

  std::shared_ptr<models::Classifier> model_;
  std::optional<data::ClassificationDataset> train_data_;
};

}  // namespace rota::app
