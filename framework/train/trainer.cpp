// The training loop (see trainer.h).
#include "framework/train/trainer.h"

#include <chrono>
#include <cmath>
#include <csignal>
#include <ctime>
#include <memory>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "framework/autograd/grad_mode.h"
#include "framework/distributed/replica_check.h"
#include "framework/distributed/single_process_communicator.h"
#include "framework/io/checkpoint.h"
#include "framework/io/checkpoint_paths.h"
#include "framework/io/log.h"
#include "framework/io/metrics_writer.h"
#include "framework/io/progress_line.h"
#include "framework/io/tensorboard_writer.h"
#include "framework/train/stop_signal.h"

namespace fs = std::filesystem;

namespace rota::train {
namespace {

/// Decay of the smoothed training loss (the progress line's default smoothing as well).
constexpr double kLossEmaDecay = 0.9;

}  // namespace

namespace {

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string format_metrics(const Metrics& metrics) {
  std::string text;
  for (const auto& [name, value] : metrics) {
    if (!text.empty()) text += " ";
    text += fmt::format("{}={:.6g}", name, value);
  }
  return text;
}

bool improves(const io::BestEval& best, double value, bool higher_is_better) {
  if (best.metric().empty() || !std::isfinite(best.value())) return std::isfinite(value);
  return higher_is_better ? value > best.value() : value < best.value();
}

const char* signal_name(int signal) {
  return signal == SIGINT ? "SIGINT" : signal == SIGTERM ? "SIGTERM" : "signal";
}

StepOptions step_options(const TrainerOptions& options,
                         const std::shared_ptr<distributed::Communicator>& comm) {
  StepOptions step = options.step;
  step.communicator = comm;
  return step;
}

// Weights and optimizer state, the tensors every rank must hold identically.
std::vector<Tensor> replica_tensors(nn::Module& model, const optim::Optimizer& optimizer) {
  std::vector<Tensor> tensors;
  for (const Variable& p : model.parameters()) tensors.push_back(p.data());
  for (const auto& [name, tensor] : optimizer.state_tensors()) tensors.push_back(tensor);
  return tensors;
}

}  // namespace

double metric_value(const Metrics& metrics, const std::string& name) {
  std::string names;
  for (const auto& [key, value] : metrics) {
    if (key == name) return value;
    names += (names.empty() ? "" : ", ") + key;
  }
  fail("train: no metric '{}' in the evaluation results (have: {})", name, names);
}

Trainer::Trainer(TrainingTask& task, optim::Optimizer& optimizer, const optim::LrSchedule& schedule,
                 TrainerOptions options)
    : task_(task),
      optimizer_(optimizer),
      options_(std::move(options)),
      comm_(options_.communicator ? options_.communicator : distributed::single_process()),
      runner_(task.model().parameters(), optimizer, schedule, step_options(options_, comm_)) {
  ROTA_CHECK(options_.total_steps >= 1, "train: total steps must be >= 1, got {}",
             options_.total_steps);
  ROTA_CHECK(options_.log_every >= 1, "train: log_every must be >= 1, got {}", options_.log_every);
  ROTA_CHECK(!options_.run_dir.empty(), "train: no run directory given");
  state_.set_seed(options_.seed);
  state_.set_lr_scale(1.0);
  if (options_.base_weights) *state_.mutable_base_weights() = *options_.base_weights;
}

void Trainer::resume(const fs::path& checkpoint_dir) {
  io::Checkpoint checkpoint = io::load_checkpoint(checkpoint_dir);
  task_.model().load_state_dict(checkpoint.model, /*strict=*/true);
  optimizer_.load_state(checkpoint.optimizer);
  task_.restore_state(checkpoint.state);
  task_.restore_checkpoint_files(checkpoint.extra_files);
  runner_.set_steps_done(checkpoint.state.step());
  state_ = checkpoint.state;
  state_.clear_files();
  if (is_root()) {
    io::truncate_metrics_after_step(options_.run_dir / "metrics.jsonl", checkpoint.state.step());
  }
  io::log_info("resumed from {} at step {} ({} tokens seen)", checkpoint_dir.string(),
               checkpoint.state.step(), checkpoint.state.tokens_seen());
}

fs::path Trainer::save(bool is_best) {
  std::string replicas;
  if (comm_->world_size() > 1) {
    const uint64_t hash = distributed::check_replicas_identical(
        *comm_, replica_tensors(task_.model(), optimizer_), "weights and optimizer state");
    replicas = fmt::format(" ({} ranks hold identical weights and optimizer state, hash {:016x})",
                           comm_->world_size(), hash);
  }
  io::Checkpoint checkpoint;
  checkpoint.model = task_.model().state_dict();
  if (state_.has_base_weights()) {
    // Only what is not in the base checkpoint: the loader fills in the rest from there.
    const auto& names = state_.base_weights().names();
    const std::set<std::string> from_base(names.begin(), names.end());
    StateDict own;
    for (const auto& [name, tensor] : checkpoint.model) {
      if (from_base.count(name) == 0) own.insert(name, tensor);
    }
    checkpoint.model = std::move(own);
  }
  checkpoint.optimizer = optimizer_.state_tensors();
  checkpoint.state = state_;
  checkpoint.state.set_step(runner_.steps_done());
  checkpoint.state.set_saved_unix_time(unix_now());
  task_.save_state(checkpoint.state);  // collective: gathers every rank's RNG streams
  std::string dir;
  if (is_root()) {
    checkpoint.state.set_epoch(checkpoint.state.data_cursor().epoch());
    checkpoint.recipe_text = options_.recipe_text;
    checkpoint.extra_files = task_.checkpoint_files();
    io::CheckpointSaveOptions save_options;
    save_options.keep_last = options_.keep_checkpoints;
    save_options.is_best = is_best;
    dir = io::save_checkpoint(options_.run_dir, checkpoint, save_options).string();
    io::log_info("checkpoint {}{}{}", dir, is_best ? " (best so far)" : "", replicas);
  }
  // The other ranks wait here until rank 0 has written the checkpoint.
  return distributed::broadcast_string(*comm_, dir);
}

int Trainer::agreed_stop_signal(int local_signal) {
  if (comm_->world_size() == 1) return local_signal;
  const int64_t mine = local_signal;
  for (int64_t signal : distributed::allgather(*comm_, std::span<const int64_t>(&mine, 1))) {
    if (signal != 0) return static_cast<int>(signal);
  }
  return 0;
}

Metrics Trainer::evaluate_and_log(int64_t step) {
  nn::Module& model = task_.model();
  model.eval();
  Metrics metrics;
  {
    NoGradGuard no_grad;
    metrics = task_.evaluate();
  }
  model.train();
  io::log_info("step {} | valid {}", step, format_metrics(metrics));
  return metrics;
}

/// What rank 0 writes while it trains: train.log, metrics.jsonl, TensorBoard events, progress.
struct Trainer::RunOutputs {
  std::optional<io::LogFileScope> log_file;
  std::unique_ptr<io::MetricsWriter> metrics;
  std::unique_ptr<io::TensorBoardWriter> tensorboard;
  std::unique_ptr<io::ProgressLine> progress;
  /// Train-split figures since the last logged step.
  double window_tokens = 0;
  double window_allreduce_s = 0;
  int64_t window_steps = 0;
  std::chrono::steady_clock::time_point window_start = std::chrono::steady_clock::now();

  void finish_progress() {
    if (progress) progress->finish();
  }
};

void Trainer::open_outputs(RunOutputs& out) const {
  fs::create_directories(options_.run_dir);
  out.log_file.emplace(options_.run_dir / io::kTrainLogFile);
  out.metrics = std::make_unique<io::MetricsWriter>(options_.run_dir / "metrics.jsonl");
  if (options_.tensorboard) {
    out.tensorboard = std::make_unique<io::TensorBoardWriter>(options_.run_dir);
  }
  io::ProgressOptions progress_options;
  progress_options.total_steps = options_.total_steps;
  progress_options.log_every = options_.log_every;
  progress_options.out = options_.progress_out;
  progress_options.terminal = options_.terminal;
  progress_options.on_log_step = [](const std::string& line) {
    io::log_to_file(io::LogLevel::kInfo, line);
  };
  out.progress = std::make_unique<io::ProgressLine>(progress_options);
  // A resumed run's console continues the smoothed loss where the checkpoint left it.
  out.progress->restore_smoothed_loss(state_.loss_ema(), state_.loss_ema_steps());
}

void Trainer::log_train_step(RunOutputs& out, const StepResult& result, int64_t step) {
  state_.set_loss_ema(kLossEmaDecay * state_.loss_ema() + (1.0 - kLossEmaDecay) * result.loss);
  state_.set_loss_ema_steps(state_.loss_ema_steps() + 1);
  out.window_tokens += static_cast<double>(result.tokens);
  out.window_allreduce_s += result.allreduce_s;
  ++out.window_steps;
  if (out.progress) {
    out.progress->update({result.step, result.loss, result.lr, result.grad_norm, result.tokens});
  }
  if (!is_root() || (step % options_.log_every != 0 && step != options_.total_steps)) return;
  const bool data_parallel = comm_->world_size() > 1;
  const auto now = std::chrono::steady_clock::now();
  const double seconds = std::chrono::duration<double>(now - out.window_start).count();
  const double tokens_per_s = seconds > 0 ? out.window_tokens / seconds : 0.0;
  const double allreduce_s = out.window_allreduce_s / static_cast<double>(out.window_steps);
  out.window_tokens = 0;
  out.window_allreduce_s = 0;
  out.window_steps = 0;
  out.window_start = now;
  io::MetricRecord record{{"step", step},
                          {"split", "train"},
                          {"loss", result.loss},
                          {"lr", result.lr},
                          {"grad_norm", result.grad_norm},
                          {"tokens_seen", state_.tokens_seen()},
                          {"tokens_per_s", tokens_per_s}};
  // The console shows a smoothed loss; the records keep this step's loss as `loss` and the
  // console's value as `loss_ema`, each named for what it is. The EMA lives in the train state,
  // so it is saved with checkpoints and a resumed run logs the same numbers.
  const double loss_ema =
      state_.loss_ema() /
      (1.0 - std::pow(kLossEmaDecay, static_cast<double>(state_.loss_ema_steps())));
  const bool smoothed = state_.loss_ema_steps() > 0;
  if (smoothed) record.emplace_back("loss_ema", loss_ema);
  if (data_parallel) {
    record.emplace_back("allreduce_s", allreduce_s);
    record.emplace_back("world_size", int64_t{comm_->world_size()});
  }
  out.metrics->write(record);
  if (out.tensorboard) {
    std::vector<std::pair<std::string, double>> scalars{{"train/loss", result.loss},
                                                        {"train/lr", result.lr},
                                                        {"train/grad_norm", result.grad_norm},
                                                        {"train/tokens_per_s", tokens_per_s}};
    if (smoothed) scalars.emplace_back("train/loss_ema", loss_ema);
    if (data_parallel) scalars.emplace_back("train/allreduce_s", allreduce_s);
    out.tensorboard->add_scalars(scalars, step);
  }
}

bool Trainer::evaluate_and_record(RunOutputs& out, int64_t step, Metrics& metrics) {
  out.finish_progress();
  metrics = evaluate_and_log(step);
  io::MetricRecord record{{"step", step}, {"split", "valid"}};
  std::vector<std::pair<std::string, double>> scalars;
  for (const auto& [name, value] : metrics) {
    record.emplace_back(name, value);
    scalars.emplace_back("valid/" + name, value);
  }
  if (out.metrics) out.metrics->write(record);
  if (out.tensorboard) out.tensorboard->add_scalars(scalars, step);
  // The metrics are the same on every rank, so is this decision.
  const double value = metric_value(metrics, options_.best_metric);
  if (!improves(state_.best_eval(), value, options_.higher_is_better)) return false;
  io::BestEval* best = state_.mutable_best_eval();
  best->set_metric(options_.best_metric);
  best->set_value(value);
  best->set_step(step);
  best->set_higher_is_better(options_.higher_is_better);
  return true;
}

bool Trainer::early_stopping_says_stop(int64_t step, const Metrics& metrics) {
  if (options_.early_stopping_patience <= 0) return false;
  const double value = metric_value(metrics, options_.best_metric);
  io::EarlyStoppingState* stopping = state_.mutable_early_stopping();
  const double gain =
      options_.higher_is_better ? value - stopping->reference() : stopping->reference() - value;
  if (!stopping->has_reference() || gain > options_.early_stopping_min_delta) {
    stopping->set_has_reference(true);
    stopping->set_reference(value);
    stopping->set_reference_step(step);
    stopping->set_stale_evaluations(0);
    return false;
  }
  stopping->set_stale_evaluations(stopping->stale_evaluations() + 1);
  if (stopping->stale_evaluations() < options_.early_stopping_patience) return false;
  stopping->set_stopped(true);
  stopping->set_stopped_step(step);
  return true;
}

StepReport Trainer::step_report(const StepResult& result, int64_t step, double step_seconds,
                                const Metrics* eval) const {
  StepReport report;
  report.step = step;
  report.total_steps = options_.total_steps;
  report.loss = result.loss;
  report.lr = result.lr;
  report.grad_norm = result.grad_norm;
  report.tokens = result.tokens;
  report.tokens_seen = state_.tokens_seen();
  report.step_seconds = step_seconds;
  report.tokens_per_s = step_seconds > 0 ? static_cast<double>(result.tokens) / step_seconds : 0;
  report.eval = eval;
  return report;
}

StepResult Trainer::run_step(RunOutputs& out) {
  try {
    return runner_.run([&] { return task_.next_micro_batch(); });
  } catch (const NonFiniteError& e) {
    out.finish_progress();
    const auto latest = io::find_latest(options_.run_dir);
    throw NonFiniteError(fmt::format(
        "{}\nTraining stopped; the parameters were not updated by this step. {}", e.what(),
        latest ? "The last good checkpoint is " + latest->string() +
                     " (lower the learning rate or add clipping, then resume or restart)"
               : std::string("No checkpoint was written yet.")));
  }
}

TrainOutcome Trainer::run() {
  // Only rank 0 writes the run directory.
  RunOutputs out;
  if (is_root()) open_outputs(out);
  std::unique_ptr<StopSignalGuard> signals;
  if (options_.handle_signals) signals = std::make_unique<StopSignalGuard>();

  TrainOutcome outcome;
  task_.model().train();
  const auto started = std::chrono::steady_clock::now();
  const double wall_before = state_.wall_time_s();
  auto update_wall_time = [&] {
    state_.set_wall_time_s(
        wall_before +
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  };
  const int64_t first_step = runner_.steps_done() + 1;
  if (first_step > 1) io::log_info("continuing at step {}/{}", first_step, options_.total_steps);
  if (comm_->world_size() > 1) io::log_info("data-parallel over {}", comm_->description());
  if (state_.early_stopping().stopped()) {
    // Resuming a run that early stopping ended: it stays ended.
    io::log_info(
        "the run was ended by early stopping at step {} (valid {} last improved to {:.6g} at "
        "step {}); evaluating its final state",
        state_.early_stopping().stopped_step(), options_.best_metric,
        state_.early_stopping().reference(), state_.early_stopping().reference_step());
    outcome.final_metrics = evaluate_and_log(runner_.steps_done());
    outcome.step = runner_.steps_done();
    outcome.wall_time_s = state_.wall_time_s();
    outcome.stopped_early = true;
    return outcome;
  }
  if (first_step > options_.total_steps) {
    // Resuming a finished run (e.g. `make train` run twice): nothing to train; report the
    // final model's validation metrics again and leave the run directory as it is.
    io::log_info("the run is already complete ({} of {} steps); evaluating its final state",
                 runner_.steps_done(), options_.total_steps);
    outcome.final_metrics = evaluate_and_log(runner_.steps_done());
    outcome.step = runner_.steps_done();
    outcome.wall_time_s = state_.wall_time_s();
    return outcome;
  }

  for (int64_t step = first_step; step <= options_.total_steps; ++step) {
    const auto step_started = std::chrono::steady_clock::now();
    const StepResult result = run_step(out);
    const double step_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - step_started).count();
    state_.set_tokens_seen(state_.tokens_seen() + result.tokens);
    log_train_step(out, result, step);

    const bool last = step == options_.total_steps;
    const bool evaluated = last || (options_.eval_every > 0 && step % options_.eval_every == 0);
    const bool is_best = evaluated && evaluate_and_record(out, step, outcome.final_metrics);
    const bool stop_early =
        evaluated && !last && early_stopping_says_stop(step, outcome.final_metrics);
    const bool observer_stop =
        options_.on_step &&
        !options_.on_step(
            step_report(result, step, step_seconds, evaluated ? &outcome.final_metrics : nullptr));
    const int signal = agreed_stop_signal(StopSignalGuard::requested());
    const bool stop_requested = signal != 0 || observer_stop ||
                                (options_.stop_after_step > 0 && step >= options_.stop_after_step);
    if (last || is_best || stop_requested || stop_early ||
        (options_.checkpoint_every > 0 && step % options_.checkpoint_every == 0)) {
      out.finish_progress();
      update_wall_time();
      outcome.last_checkpoint = save(is_best);
    }
    if (stop_early) {
      const io::EarlyStoppingState& stopping = state_.early_stopping();
      io::log_info(
          "early stopping: valid {} has not improved by more than {:g} for {} evaluations (it "
          "last did, to {:.6g}, at step {}); the run ends at step {}/{}",
          options_.best_metric, options_.early_stopping_min_delta, stopping.stale_evaluations(),
          stopping.reference(), stopping.reference_step(), step, options_.total_steps);
      outcome.status = TrainStatus::kFinished;
      outcome.stopped_early = true;
      outcome.step = step;
      outcome.wall_time_s = state_.wall_time_s();
      if (state_.has_best_eval()) {
        io::log_info("best valid {} = {:.6g} at step {}", state_.best_eval().metric(),
                     state_.best_eval().value(), state_.best_eval().step());
      }
      return outcome;
    }
    if (stop_requested && !last) {
      out.finish_progress();
      if (signal != 0) {
        io::log_warn("{} received: stopped at step {}/{} after writing {}; continue with --resume",
                     signal_name(signal), step, options_.total_steps,
                     outcome.last_checkpoint.string());
      } else {
        io::log_info("stopped at step {}/{} as asked; continue with --resume", step,
                     options_.total_steps);
      }
      update_wall_time();
      outcome.status = TrainStatus::kInterrupted;
      outcome.signal = signal;
      outcome.step = step;
      outcome.final_metrics.clear();
      outcome.wall_time_s = state_.wall_time_s();
      return outcome;
    }
  }
  out.finish_progress();
  update_wall_time();
  outcome.status = TrainStatus::kFinished;
  outcome.step = runner_.steps_done();
  outcome.wall_time_s = state_.wall_time_s();
  if (state_.has_best_eval()) {
    io::log_info("best valid {} = {:.6g} at step {}", state_.best_eval().metric(),
                 state_.best_eval().value(), state_.best_eval().step());
  }
  return outcome;
}

}  // namespace rota::train
