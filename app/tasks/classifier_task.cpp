// Classifier task: padded TSV or data.files examples (labels mapped by name), cross-entropy over
// classes, accuracy and MCC.
#include "app/tasks/classifier_task.h"
#include <filesystem>
#include "app/setup/lora_setup.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "data/dataset/batch.h"
#include "data/dataset/file_examples.h"
#include "framework/autograd/ops/loss.h"
#include "framework/base/file_io.h"
#include "framework/distributed/sharded_sums.h"
#include "framework/io/log.h"
#include "framework/train/classification_metrics.h"

namespace rota::app {

ClassifierTask::ClassifierTask(TaskInputs inputs) : Task(std::move(inputs)) {
  Generator init_gen(seeds_.init);
  model_ = std::make_shared<models::Classifier>(model_options_, init_gen, dropout_gen_);
  add_recipe_adapters(inputs_.recipe, *model_, init_gen, dropout_gen_);
}

data::ClassificationOptions ClassifierTask::dataset_options() const {
  const recipes::Data& d = recipe().data();
  data::ClassificationOptions o;
  o.max_length = d.sequence_length();
  o.num_classes = recipe().model().classifier().num_classes();
  if (d.has_tsv()) {
    o.text_columns = {d.tsv().text()};
    if (d.tsv().has_text_pair()) o.text_columns.push_back(d.tsv().text_pair());
    o.label_column = d.tsv().label();
    switch (d.tsv().header()) {
      case recipes::TsvColumns::PRESENT:
        o.header = data::TsvHeader::kPresent;
        break;
      case recipes::TsvColumns::ABSENT:
        o.header = data::TsvHeader::kAbsent;
        break;
      default:
        o.header = data::TsvHeader::kDetect;
    }
  }
  const data::SpecialTokens& specials = tokenizer().specials();
  o.add_cls = specials.has(data::SpecialToken::kCls);
  o.add_sep = specials.has(data::SpecialToken::kSep);
  return o;
}

const data::LabelMap* ClassifierTask::label_map() {
  // Only data.files sources have a label map. A checkpoint's labels.json or the recipe's list
  // need no data: predicting with a trained run must not need its training files.
  if (!recipe().data().has_files()) return nullptr;
  if (!labels_) {
    const recipes::Files& f = recipe().data().files();
    const int64_t classes = recipe().model().classifier().num_classes();
    std::string from;
    if (inputs_.checkpoint && std::filesystem::exists(*inputs_.checkpoint / data::kLabelsFile)) {
      const std::filesystem::path path = *inputs_.checkpoint / data::kLabelsFile;
      labels_ = data::LabelMap::from_json(read_file(path), path.string());
      from = path.string();
    } else if (f.labels_size() > 0) {
      labels_ = data::LabelMap::from_names({f.labels().begin(), f.labels().end()});
      from = "data.files.labels";
    } else {
      const data::FileSource* files = corpus().file_source();
      ROTA_CHECK(files != nullptr, "labels: data.files opened without its file source");
      labels_ = data::LabelMap::from_training_labels(data::record_labels(*files, "train"), classes,
                                                     files->describe("train"));
      from = "the training labels";
    }
    ROTA_CHECK(labels_->size() == classes,
               "labels: {} has {} labels but model.classifier.num_classes is {}", from,
               labels_->size(), classes);
    io::log_info("data: labels (class 0, 1, ...) from {}: {}", from,
                 fmt::format("{}", fmt::join(labels_->names(), ", ")));
  }
  return &*labels_;
}

std::vector<std::string> ClassifierTask::label_names() {
  if (const data::LabelMap* map = label_map()) return map->names();
  std::vector<std::string> names;
  for (int64_t i = 0; i < recipe().model().classifier().num_classes(); ++i) {
    names.push_back(std::to_string(i));
  }
  return names;
}

std::map<std::string, std::string> ClassifierTask::data_files() const {
  if (!labels_) return {};
  return {{data::kLabelsFile, labels_->to_json()}};
}

data::ClassificationDataset ClassifierTask::make_dataset(const std::string& split) {
  data::ClassificationOptions options = dataset_options();
  if (const data::FileSource* files = corpus().file_source()) {
    options.text_columns = {"text"};
    if (!files->spec().fields.text_pair.empty()) options.text_columns.push_back("text_pair");
    options.label_column = "label";
    return data::ClassificationDataset(data::file_examples(*files, split, label_map()), tokenizer(),
                                       options);
  }
  if (!recipe().data().has_tsv()) {
    options.text_columns = corpus().text_columns();
    options.label_column = corpus().label_column();
  }
  return data::ClassificationDataset::from_corpus(corpus(), split, tokenizer(), options);
}

const data::ClassificationDataset& ClassifierTask::split_dataset(const std::string& split) {
  auto it = eval_data_.find(split);
  if (it == eval_data_.end()) it = eval_data_.emplace(split, make_dataset(split)).first;
  return it->second;
}

void ClassifierTask::load_data() {
  const data::FileSource* files = corpus().file_source();
  if (files != nullptr) files->check_all();
  prepare_training_data();
  if (files != nullptr) {
    for (const std::string& split : files->splits()) {
      if (split == "train") continue;
      const data::ClassificationDataset& dataset = split_dataset(split);
      io::log_info("data: {} split: {} examples", split, dataset.size());
    }
  } else {
    split_dataset(validation_split());
  }
}

int64_t ClassifierTask::prepare_training_data() {
  if (!train_data_) {
    train_data_.emplace(make_dataset("train"));
    io::log_info("data: train split: {} examples ({} truncated to {} tokens)", train_data_->size(),
                 train_data_->truncated_count(), recipe().data().sequence_length());
    ROTA_CHECK(train_data_->size() >= recipe().data().batch_size(),
               "data: the train split has {} examples, fewer than one batch of {}",
               train_data_->size(), recipe().data().batch_size());
    loader_.emplace(train_data_->size(), training_loader_options());
  }
  return train_data_->size();
}

train::MicroBatch ClassifierTask::next_micro_batch() {
  prepare_training_data();
  const data::ClassificationBatch batch = train_data_->batch(loader_->next().indices);
  int64_t tokens = 0;
  const float* mask = batch.mask.data<float>();
  for (int64_t i = 0; i < batch.mask.numel(); ++i) tokens += mask[i] != 0.0f;
  return {model_->loss(batch.tokens, batch.mask, batch.labels), tokens};
}

TrainingBatch ClassifierTask::next_training_batch() {
  prepare_training_data();
  const data::LoaderBatch indices = loader_->next();
  const data::ClassificationBatch batch = train_data_->batch(indices.indices);
  return {batch.tokens, Tensor(), batch.mask, batch.labels, Tensor(), indices.epoch};
}

train::Metrics ClassifierTask::evaluate_split(const std::string& split, int64_t max_batches) {
  const data::ClassificationDataset& dataset = split_dataset(split);
  ROTA_CHECK(dataset.labeled(), "eval: the {} split of '{}' has no labels", split, corpus().name());
  data::BatchLoader loader(dataset.size(), evaluation_loader_options());
  const int64_t batches = evaluation_batch_count(loader, max_batches);
  const int64_t classes = recipe().model().classifier().num_classes();
  // Batch b runs on rank b % ranks; loss sums are added in batch order (one process's numbers)
  // and the confusion counts summed over the ranks.
  distributed::ShardedSums sums(communicator(), batches, 1, 0);
  std::vector<int64_t> counts(static_cast<size_t>(classes * classes), 0);  // [true, predicted]
  for (int64_t b = 0; b < batches; ++b) {
    const std::vector<int64_t> indices = loader.next().indices;
    if (!sums.mine(b)) continue;
    const data::ClassificationBatch batch = dataset.batch(indices);
    const int64_t n = batch.labels.numel();
    if (n == 0) continue;
    check_batch_memory(batch.tokens);
    const Variable logits = model_->forward(batch.tokens, batch.mask);  // [B, C]
    sums.set(b, {{cross_entropy(logits, batch.labels).item() * static_cast<double>(n)}});
    const Tensor scores = logits.data().contiguous();
    const float* s = scores.data<float>();
    const int64_t* labels = batch.labels.data<int64_t>();
    for (int64_t i = 0; i < n; ++i) {
      int64_t best = 0;
      for (int64_t c = 1; c < classes; ++c) {
        if (s[i * classes + c] > s[i * classes + best]) best = c;
      }
      ROTA_CHECK(labels[i] >= 0 && labels[i] < classes,
                 "eval: label {} is not in [0, {}) in the {} split", labels[i], classes, split);
      ++counts[static_cast<size_t>(labels[i] * classes + best)];
    }
  }
  const double loss_sum = sums.totals().doubles[0];
  communicator().allreduce_sum(std::span<int64_t>(counts));
  train::ConfusionMatrix confusion(classes);
  for (int64_t t = 0; t < classes; ++t) {
    for (int64_t p = 0; p < classes; ++p) {
      for (int64_t k = 0; k < counts[static_cast<size_t>(t * classes + p)]; ++k)
        confusion.add(t, p);
    }
  }
  ROTA_CHECK(confusion.total() > 0, "eval: the {} split has no examples", split);
  return {{"loss", loss_sum / static_cast<double>(confusion.total())},
          {"accuracy", confusion.accuracy()},
          {"mcc", confusion.matthews_correlation()},
          {"examples", static_cast<double>(confusion.total())}};
}

std::vector<EvalBatch> ClassifierTask::evaluation_batches(const std::string& split,
                                                          int64_t max_batches) {
  const data::ClassificationDataset& dataset = split_dataset(split);
  ROTA_CHECK(dataset.labeled(), "eval: the {} split of '{}' has no labels", split, corpus().name());
  data::BatchLoader loader(dataset.size(), evaluation_loader_options());
  std::vector<EvalBatch> batches;
  for (int64_t b = 0; b < evaluation_batch_count(loader, max_batches); ++b) {
    const data::ClassificationBatch batch = dataset.batch(loader.next().indices);
    if (batch.labels.numel() == 0) continue;  // evaluate_split skips it too
    batches.push_back({batch.tokens, Tensor(), batch.mask, batch.labels});
  }
  return batches;
}

}  // namespace rota::app
