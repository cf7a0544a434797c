// Sequence classification task: a classifier on labelled text.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "app/tasks/task.h"
#include "data/dataset/classification_dataset.h"
#include "data/source/label_map.h"
#include "models/language_models.h"

namespace rota::app {

/// Sequence classification on GLUE-style TSV or the records of data.files. Metrics: loss (mean
/// over examples), accuracy, mcc (Matthews correlation).
///
/// data.files labels are mapped to class ids by a data::LabelMap: the checkpoint's labels.json
/// when resuming or evaluating, else data.files.labels, else derived from the training labels
/// (LabelMap::from_training_labels). The map is saved as labels.json in the run directory and
/// every checkpoint (data_files()).
class ClassifierTask : public Task {
 public:
  explicit ClassifierTask(TaskInputs inputs);
  nn::Module& model() override { return *model_; }
  models::Classifier& classifier() { return *model_; }
  train::MicroBatch next_micro_batch() override;
  TrainingBatch next_training_batch() override;
  train::Metrics evaluate_split(const std::string& split, int64_t max_batches) override;
  std::vector<EvalBatch> evaluation_batches(const std::string& split, int64_t max_batches) override;
  /// Prepares the training examples and reads every other split (data.files: all of them;
  /// other sources: the validation split), so bad data fails before training.
  void load_data() override;
  /// labels.json for data.files sources (once the labels are known).
  std::map<std::string, std::string> data_files() const override;
  /// The class names in class-id order: data.files labels, or "0" … "C−1" for integer labels.
  std::vector<std::string> label_names();

 protected:
  int64_t prepare_training_data() override;

 private:
  data::ClassificationOptions dataset_options() const;
  /// The label map of a data.files source (nullptr for other sources).
  const data::LabelMap* label_map();
  data::ClassificationDataset make_dataset(const std::string& split);
  const data::ClassificationDataset& split_dataset(const std::string& split);

  std::optional<data::LabelMap> labels_;
  std::map<std::string, data::ClassificationDataset> eval_data_;

  std::shared_ptr<models::Classifier> model_;
  std::optional<data::ClassificationDataset> train_data_;
};

}  // namespace rota::app
