// A recipe's model and data as one training task (causal LM, masked LM or classifier).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "app/setup/document_setup.h"
#include "app/setup/memory_budget.h"
#include "app/tasks/position_buckets.h"
#include "data/corpus/corpus.h"
#include "data/dataset/lm_dataset.h"
#include "data/loader/batch_loader.h"
#include "data/loader/loader_cursor.h"
#include "data/tokenizer/tokenizer.h"
#include "framework/distributed/communicator.h"
#include "framework/distributed/single_process_communicator.h"
#include "framework/nn/module.h"
#include "framework/train/trainer.h"
#include "models/memory_estimate.h"
#include "models/model_options.h"
#include "recipes/recipe.pb.h"
#include "recipes/recipe_error.h"

namespace rota::app {

/// The seeds of a run's independent random streams, derived from train.seed.
struct RunSeeds {
  explicit RunSeeds(uint64_t seed);
  uint64_t init;     // parameter initialisation
  uint64_t dropout;  // dropout masks (a stream saved in checkpoints; one per rank, see Task)
  uint64_t data;     // epoch shuffling
  uint64_t masking;  // MLM corruption, per (epoch, window)
};

/// One batch of an evaluation, as evaluate_split feeds it to the model. Tensors a task does not
/// use are undefined: causal LM tokens and targets; masked LM tokens, targets and mask;
/// classifier tokens, mask and labels.
struct EvalBatch {
  Tensor tokens;   // [B, T] i64
  Tensor targets;  // [B, T] i64, data::kIgnoreIndex where there is no target
  Tensor mask;     // [B, T] f32: 1 at real tokens, 0 at padding
  Tensor labels;   // [B] i64
};

/// One micro-batch of training data, as the task's next_micro_batch() feeds it to the model.
struct TrainingBatch {
  Tensor tokens;       // [B, T] i64
  Tensor targets;      // [B, T] i64, data::kIgnoreIndex where there is no target (LMs)
  Tensor mask;         // [B, T] f32: masked LM: 1 at real tokens; classifier: 1 at real tokens
  Tensor labels;       // [B] i64 (classifiers)
  Tensor segment_ids;  // [B, T] i64: packed documents, each window's document index (LMs)
  int64_t epoch = 0;   // the pass over the training split it belongs to
};

/// Everything a task is built from. The tokenizer is already chosen (built, loaded from a
/// checkpoint, or from data.tokenizer.path).
struct TaskInputs {
  recipes::Recipe recipe;  // resolved and validated
  std::shared_ptr<const data::Tokenizer> tokenizer;
  data::DataOptions data_options = data::default_data_options();
  /// The ranks of a data-parallel run (docs/distributed.md); the default is one process.
  std::shared_ptr<distributed::Communicator> communicator = distributed::single_process();
  /// The checkpoint being resumed or evaluated, if any: data files saved with it (labels.json)
  /// are read from there rather than derived again from the training data.
  std::optional<std::filesystem::path> checkpoint;
  /// What the model is built for, which decides the memory estimate checked before it is
  /// built (models/memory_estimate.h): training (weights, gradients, AdamW state, saved
  /// activations) or inference (eval, predict, generate: weights and one forward pass).
  bool inference = false;
  MemoryBudget memory;  // default: the memory available when the task is built
};

/// A TrainingTask that can also evaluate any split of its corpus. Training data is prepared
/// only when training starts (eval and generate never read the training split).
///
/// Data-parallel (a communicator with W > 1 ranks): the training loader of rank r takes its
/// part of every global batch (data::BatchLoader's sharding), data.batch_size / (accumulation x
/// W) sequences per micro-batch; rank r's dropout stream is seeded from (dropout seed, r) (rank 0
/// keeps the single-process stream); evaluation batches are shared round-robin and summed in
/// batch order, so every rank gets the single-process numbers.
class Task : public train::TrainingTask {
 public:
  explicit Task(TaskInputs inputs);
  ~Task() override;

  /// Metrics of a whole split ("valid" or "test"); max_batches > 0 limits the batches.
  /// Collective when data-parallel: call it on every rank.
  virtual train::Metrics evaluate_split(const std::string& split, int64_t max_batches) = 0;
  /// The loss by position in the window over `split` (`rota eval --by-position`): the causal
  /// LM's; other kinds refuse (recipes::RecipeError). Collective when data-parallel.
  /// Evaluation windows of data.sequence_length tokens every `stride` tokens, scoring only
  /// what the previous window did not (`rota eval --stride`); 0 = non-overlapping. Causal LMs
  /// only: the other kinds refuse a stride (recipes::RecipeError).
  virtual void set_evaluation_stride(int64_t stride);
  virtual std::vector<PositionBucket> evaluate_by_position(const std::string& split,
                                                           int64_t max_batches);
  /// The batches evaluate_split(split, max_batches) runs, in batch order, as one process runs
  /// them (for reproducing an evaluation elsewhere, e.g. the Python bindings). Not collective.
  virtual std::vector<EvalBatch> evaluation_batches(const std::string& split,
                                                    int64_t max_batches) = 0;
  /// The next micro-batch of training data exactly as next_micro_batch() would draw it (same
  /// cursor, same order, same masking), without running the model: for feeding another
  /// framework with Rota's data pipeline. train.carry_state is refused (its batches carry the
  /// model's state; recipes::RecipeError).
  virtual TrainingBatch next_training_batch() = 0;
  /// Validation metrics with the recipe's train.eval_batches.
  train::Metrics evaluate() override;
  /// Optimizer steps in one pass over the training split at the recipe's global batch.
  int64_t steps_per_epoch();
  /// The data cursor and the dropout streams (RNG "dropout" is rank 0's, "dropout.rank<r>" rank
  /// r's, gathered from every rank); tokenizer files for checkpoints.
  void save_state(io::TrainState& state) const override;
  /// Restores the cursor (examples counted globally, so any world size can continue it) and
  /// this rank's dropout stream; a rank the checkpoint has no stream for (more ranks than when
  /// it was written) starts a fresh one from (dropout seed, rank, step).
  void restore_state(const io::TrainState& state) override;
  std::map<std::string, std::string> checkpoint_files() const override;
  /// Files that describe the data and go into the run directory and every checkpoint (a
  /// classifier on data.files: labels.json); empty by default.
  virtual std::map<std::string, std::string> data_files() const { return {}; }
  /// Reads and checks every split before training starts: the training data is prepared and
  /// each other split is read through, so that missing files, bad content (data.files: NUL
  /// bytes, invalid UTF-8, malformed records), empty splits and characters the tokenizer cannot
  /// encode are reported now, with file and line, rather than at the first evaluation.
  virtual void load_data();

  const recipes::Recipe& recipe() const { return inputs_.recipe; }
  const data::Tokenizer& tokenizer() const { return *inputs_.tokenizer; }
  const models::ModelOptions& model_options() const { return model_options_; }
  const data::Corpus& corpus();
  /// The run's packed documents (app/setup/document_setup.h).
  const DocumentSettings& documents() const { return documents_; }
  /// Sequences per micro-batch on this rank: data.batch_size / (train.gradient_accumulation x
  /// ranks).
  int64_t micro_batch_size() const;
  /// The training memory of the model as built now: gradients and optimizer state only for the
  /// parameters that train (fine-tuning with frozen parameters or adapters), the adapters' own
  /// weights included. check_trained_memory refuses it over the budget, as construction does for
  /// the whole model (with finetune.lora or linearize construction leaves that part to it).
  models::MemoryEstimate trained_memory_estimate();
  void check_trained_memory();
  /// Sequences per evaluation batch: data.batch_size / train.gradient_accumulation, whatever the
  /// number of ranks (so eval_batches and the results do not depend on it).
  int64_t eval_batch_size() const;
  distributed::Communicator& communicator() const { return *inputs_.communicator; }
  /// The name of the validation split of this corpus ("valid").
  std::string validation_split();
  /// The splits the task's data has (corpus, data.files or prepared directory), in its order.
  std::vector<std::string> split_names();
  /// The split an evaluation asked for by `requested` ("" means "test"; "valid", "validation",
  /// "val" and "dev" all mean the validation split, whatever the data calls it), checked to
  /// exist: otherwise a RecipeError naming `what` (the run), the splits there are and how to
  /// pick one (`split_option`: "--split" for the CLI, "split=" for Python).
  std::string evaluation_split_for(const std::string& requested, const std::string& what,
                                   const std::string& split_option);

 protected:
  /// For a tokenizer without <unk> (other than BYTE): every split other than train is encoded
  /// piece by piece, and a character it cannot encode is an error naming file:line:column, the
  /// character and the fix. Also refuses an empty split.
  void check_text_splits();
  /// Creates the training dataset and `loader_` over it (idempotent); returns the number of
  /// examples.
  virtual int64_t prepare_training_data() = 0;
  /// The training loader's options: micro_batch_size(), this rank's shard, the data seed.
  data::LoaderOptions training_loader_options() const;
  /// The refusal of an evaluation option other model kinds do not have: "<what> to causal
  /// language models (this run is a KIND)", `what` ending in its verb ("… applies").
  recipes::RecipeError causal_lm_only(const std::string& what) const;
  /// Where LM training windows start (data.window_sampling), seeded from train.seed.
  data::WindowSampling training_window_sampling() const;
  /// The loader of an evaluation split: eval_batch_size(), in order, every example once.
  data::LoaderOptions evaluation_loader_options() const;
  /// How many batches of an evaluation loader evaluate_split runs: all of them, or the first
  /// max_batches when max_batches > 0.
  static int64_t evaluation_batch_count(const data::BatchLoader& loader, int64_t max_batches);

  TaskInputs inputs_;
  std::optional<data::BatchLoader> loader_;  // training batches; set by prepare_training_data
  models::ModelOptions model_options_;
  RunSeeds seeds_;
  std::shared_ptr<Generator> dropout_gen_;

  /// Refuses (recipes::RecipeError) an evaluation batch [B, W] whose forward pass would need
  /// more memory than the budget, before it runs.
  void check_batch_memory(const Tensor& tokens) const;
  /// The token that ends every packed document (data.document_separator, or the tokenizer's
  /// <sep>/<eos> for documents the source marks), or −1 without packed documents.
  int64_t document_separator() const { return documents_.separator; }
  /// The refusal of evaluation_batches() for packed documents (EvalBatch has no segment ids).
  recipes::RecipeError packed_batches_refusal() const;

 private:
  /// Refuses (recipes::RecipeError) a model whose estimated memory for its use exceeds the
  /// budget of its inputs, before anything of it is allocated.
  void check_model_memory() const;

  std::unique_ptr<data::Corpus> corpus_;
  mutable int64_t checked_batch_tokens_ = 0;  // the largest batch check_batch_memory passed
  DocumentSettings documents_;                // packed documents (data.documents)
};

/// Why data.batch_size does not split into train.gradient_accumulation × `ranks` equal
/// micro-batches; empty when it does.
std::string batch_split_problem(const recipes::Recipe& recipe, int64_t ranks);

/// Builds the task for recipe.model.kind (initialising the model from train.seed).
std::unique_ptr<Task> make_task(TaskInputs inputs);

}  // namespace rota::app
