// A recipe's model and data as one training task (causal LM, masked LM or classifier).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "data/corpus/corpus.h"
#include "data/loader/loader_cursor.h"
#include "data/tokenizer/tokenizer.h"
#include "framework/nn/module.h"
#include "framework/train/trainer.h"
#include "models/model_options.h"
#include "recipes/recipe.pb.h"

namespace rota::cli {

/// The seeds of a run's independent random streams, derived from train.seed.
struct RunSeeds {
  explicit RunSeeds(uint64_t seed);
  uint64_t init;     // parameter initialisation
  uint64_t dropout;  // dropout masks (a stream saved in checkpoints)
  uint64_t data;     // epoch shuffling
  uint64_t masking;  // MLM corruption, per (epoch, window)
};

/// Everything a task is built from. The tokenizer is already chosen (built, loaded from a
/// checkpoint, or from data.tokenizer.path).
struct TaskInputs {
  recipes::Recipe recipe;  // resolved and validated
  std::shared_ptr<const data::Tokenizer> tokenizer;
  data::DataOptions data_options = data::default_data_options();
};

/// A TrainingTask that can also evaluate any split of its corpus. Training data is prepared
/// only when training starts (eval and generate never read the training split).
class Task : public train::TrainingTask {
 public:
  explicit Task(TaskInputs inputs);
  ~Task() override;

  /// Metrics of a whole split ("valid" or "test"); max_batches > 0 limits the batches.
  virtual train::Metrics evaluate_split(const std::string& split, int64_t max_batches) = 0;
  /// Validation metrics with the recipe's train.eval_batches.
  train::Metrics evaluate() override;
  /// Optimizer steps in one pass over the training split at the recipe's global batch.
  virtual int64_t steps_per_epoch() = 0;
  /// The data cursor, dropout stream; tokenizer files for checkpoints.
  void save_state(io::TrainState& state) const override;
  void restore_state(const io::TrainState& state) override;
  std::map<std::string, std::string> checkpoint_files() const override;

  const recipes::Recipe& recipe() const { return inputs_.recipe; }
  const data::Tokenizer& tokenizer() const { return *inputs_.tokenizer; }
  const models::ModelOptions& model_options() const { return model_options_; }
  const data::Corpus& corpus();
  /// Sequences per micro-batch: data.batch_size / train.gradient_accumulation.
  int64_t micro_batch_size() const;
  /// The name of the validation split of this corpus ("valid").
  std::string validation_split();

 protected:
  /// Creates the training dataset and loader (idempotent); returns the number of examples.
  virtual int64_t prepare_training_data() = 0;
  /// The loader's cursor and restoring it (after prepare_training_data).
  virtual data::LoaderCursor loader_cursor() const = 0;
  virtual void restore_loader(const data::LoaderCursor& cursor) = 0;

  TaskInputs inputs_;
  models::ModelOptions model_options_;
  RunSeeds seeds_;
  std::shared_ptr<Generator> dropout_gen_;

 private:
  std::unique_ptr<data::Corpus> corpus_;
};

/// Builds the task for recipe.model.kind (initialising the model from train.seed).
std::unique_ptr<Task> make_task(TaskInputs inputs);

}  // namespace rota::cli
