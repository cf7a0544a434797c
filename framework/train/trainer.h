// The training loop: optimizer steps, evaluation, checkpoints, resume, signals, metrics, progress.
#pragma once

#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "framework/distributed/communicator.h"
#include "framework/io/train_state.h"
#include "framework/nn/module.h"
#include "framework/optim/optimizer.h"
#include "framework/optim/schedule.h"
#include "framework/train/train_step.h"

namespace rota::train {

/// Evaluation results in display order, e.g. {{"loss", 1.41}, {"ppl", 4.1}}.
using Metrics = std::vector<std::pair<std::string, double>>;

/// The value of `name` in metrics; throws naming the available keys when absent.
double metric_value(const Metrics& metrics, const std::string& name);

/// What the loop needs from a model and its data (models and data sit above the framework and
/// plug in through this interface).
class TrainingTask {
 public:
  virtual ~TrainingTask() = default;
  virtual nn::Module& model() = 0;
  /// Loss of the next training micro-batch (the model is in training mode, gradients on).
  virtual MicroBatch next_micro_batch() = 0;
  /// Validation metrics (called in eval mode without gradients; the trainer restores
  /// training mode afterwards). Must not disturb the training data order or RNG streams.
  /// Data-parallel: called on every rank; must return the same metrics on every rank.
  virtual Metrics evaluate() = 0;
  /// Writes the data cursor and the task's RNG streams into `state`. Data-parallel: called on
  /// every rank (it may gather the ranks' streams); rank 0's state is what gets saved.
  virtual void save_state(io::TrainState& state) const = 0;
  /// Restores what save_state wrote.
  virtual void restore_state(const io::TrainState& state) = 0;
  /// Files kept with every checkpoint, name -> bytes (e.g. the tokenizer). Called on rank 0
  /// after save_state.
  virtual std::map<std::string, std::string> checkpoint_files() const { return {}; }
  /// Reads back what it needs of the files a checkpoint kept (checkpoint_files()), after
  /// restore_state; refuses (rota::Error, saying why) files that do not fit the run. Default:
  /// nothing to read.
  virtual void restore_checkpoint_files(const std::map<std::string, std::string>& files) {
    (void)files;
  }
};

/// What a step observer sees after each optimizer step (TrainerOptions::on_step).
struct StepReport {
  int64_t step = 0;  // 1-based
  int64_t total_steps = 0;
  double loss = 0;  // mean over the step's micro-batches (and ranks)
  double lr = 0;
  double grad_norm = 0;           // before clipping
  int64_t tokens = 0;             // tokens of this step (all ranks)
  int64_t tokens_seen = 0;        // since the start of the run, resumes included
  double step_seconds = 0;        // wall time of this step's forward, backward and update
  double tokens_per_s = 0;        // tokens / step_seconds
  const Metrics* eval = nullptr;  // the validation metrics when this step evaluated, else null
};

/// Called after each step (after the step's evaluation, before its checkpoint); returning false
/// stops the run there as stop_after_step does (a checkpoint is written and the outcome is
/// kInterrupted, unless it was the last step). Data-parallel: called on every rank, which must
/// all return the same answer.
using StepObserver = std::function<bool(const StepReport& report)>;

struct TrainerOptions {
  std::filesystem::path run_dir;  // checkpoints/, metrics.jsonl, train.log, events
  int64_t total_steps = 1;
  int64_t eval_every = 0;        // 0: evaluate only at the end
  int64_t checkpoint_every = 0;  // 0: checkpoint only at the end
  int keep_checkpoints = 3;      // periodic checkpoints kept (best and latest always kept)
  int64_t log_every = 50;        // metrics.jsonl / train.log / plain progress cadence
  StepOptions step;
  bool tensorboard = true;
  /// Metric (a key of TrainingTask::evaluate's result) that picks the best checkpoint.
  std::string best_metric = "loss";
  bool higher_is_better = false;
  std::string recipe_text;  // stored in every checkpoint
  /// Tensors the checkpoints leave out because another checkpoint holds them unchanged (the
  /// frozen pretrained weights of a run with low-rank adapters): recorded in every checkpoint's
  /// state, which the loader follows. A resumed run keeps the reference its checkpoint has.
  std::optional<io::BaseWeights> base_weights;
  uint64_t seed = 0;  // recorded in the train state
  /// Stop after this many steps as if interrupted (a checkpoint is written; resuming later
  /// continues the same schedule); 0 = run to total_steps.
  int64_t stop_after_step = 0;
  /// Early stopping (train.early_stopping): the run ends, as finished, at the evaluation that
  /// makes `early_stopping_patience` evaluations in a row without an improvement of more than
  /// early_stopping_min_delta in best_metric; 0 = off.
  int early_stopping_patience = 0;
  double early_stopping_min_delta = 0;
  /// Sees every step and may stop the run (the Python bindings' callback); empty: none.
  StepObserver on_step;
  /// Install SIGINT/SIGTERM handlers that checkpoint and stop cleanly during run().
  bool handle_signals = true;
  std::FILE* progress_out = stdout;
  std::optional<bool> terminal;  // progress line mode; default isatty(progress_out)
  /// The ranks of a data-parallel job (see docs/distributed.md); null: this process alone.
  /// Every rank runs the same Trainer; only rank 0 writes logs, metrics and checkpoints.
  std::shared_ptr<distributed::Communicator> communicator{};
};

enum class TrainStatus {
  kFinished,     // reached total_steps
  kInterrupted,  // signal or stop_after_step: a checkpoint holds the state to resume from
};

struct TrainOutcome {
  TrainStatus status = TrainStatus::kFinished;
  int64_t step = 0;       // optimizer steps completed
  Metrics final_metrics;  // the last evaluation (empty when interrupted)
  std::filesystem::path last_checkpoint;
  double wall_time_s = 0;      // summed over resumes
  int signal = 0;              // the signal that stopped the run, if any
  bool stopped_early = false;  // finished by early stopping, before total_steps
};

/// Runs training to the end (or to an interruption). Writes in run_dir: metrics.jsonl (one
/// line per log_every steps with split "train", one per evaluation with split "valid"),
/// train.log, a TensorBoard event file, checkpoints/step_N (see io/checkpoint.h) every
/// checkpoint_every steps, at every evaluation that improves the best metric (pointed at by
/// checkpoints/best) and at the end.
///
/// Data-parallel (options.communicator with W > 1 ranks): every rank constructs and runs the
/// Trainer on its shard. Decisions are taken on values all ranks share: the reduced loss and
/// gradients (StepRunner), the task's reduced evaluation, and a stop request that any rank's
/// SIGINT/SIGTERM raises for all of them at the same step. At every checkpoint the ranks compare
/// hashes of their weights and optimizer state (a CollectiveError if they differ); rank 0
/// writes, the others wait for it. metrics.jsonl train lines also get "allreduce_s" (mean
/// seconds per step in the gradient allreduce) and "world_size".
class Trainer {
 public:
  Trainer(TrainingTask& task, optim::Optimizer& optimizer, const optim::LrSchedule& schedule,
          TrainerOptions options);
  /// Continues from a checkpoint of the same run: loads weights (strictly), optimizer state,
  /// the step counter, the task's data cursor and RNG streams, so the rest of the run is
  /// bit-identical to an uninterrupted one. Also drops metrics.jsonl lines after that step.
  void resume(const std::filesystem::path& checkpoint_dir);
  TrainOutcome run();
  int64_t step() const { return runner_.steps_done(); }

 private:
  struct RunOutputs;
  void open_outputs(RunOutputs& out) const;
  /// One optimizer step; a non-finite loss or gradient ends the run naming the last checkpoint.
  StepResult run_step(RunOutputs& out);
  /// What the step observer sees of a step.
  StepReport step_report(const StepResult& result, int64_t step, double step_seconds,
                         const Metrics* eval) const;
  /// Progress, and on log steps the train line of metrics.jsonl and TensorBoard (rank 0).
  void log_train_step(RunOutputs& out, const StepResult& result, int64_t step);
  /// Evaluates, records the valid line, and returns whether the best metric improved.
  bool evaluate_and_record(RunOutputs& out, int64_t step, Metrics& metrics);
  Metrics evaluate_and_log(int64_t step);
  /// Counts this evaluation for early stopping (state_.early_stopping); true when the run
  /// must end here.
  bool early_stopping_says_stop(int64_t step, const Metrics& metrics);
  std::filesystem::path save(bool is_best);
  bool is_root() const { return comm_->rank() == 0; }
  /// The stop signal any rank received (the first in rank order), the same on every rank.
  int agreed_stop_signal(int local_signal);

  TrainingTask& task_;
  optim::Optimizer& optimizer_;
  TrainerOptions options_;
  std::shared_ptr<distributed::Communicator> comm_;  // never null
  StepRunner runner_;
  io::TrainState state_;  // best_eval, tokens, wall time carried across resumes
};

}  // namespace rota::train
