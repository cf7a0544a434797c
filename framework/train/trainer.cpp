// The training loop (see trainer.h).
#include "framework/train/trainer.h"

#include <chrono>
#include <cmath>
#include <csignal>
#include <ctime>
#include <fstream>
#include <memory>

#include <fmt/format.h>

#include "framework/autograd/grad_mode.h"
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
      runner_(task.model().parameters(), optimizer, schedule, options_.step) {
  ROTA_CHECK(options_.total_steps >= 1, "train: total steps must be >= 1, got {}",
             options_.total_steps);
  ROTA_CHECK(options_.log_every >= 1, "train: log_every must be >= 1, got {}", options_.log_every);
  ROTA_CHECK(!options_.run_dir.empty(), "train: no run directory given");
  state_.set_seed(options_.seed);
  state_.set_lr_scale(1.0);
}

void Trainer::resume(const fs::path& checkpoint_dir) {
  io::Checkpoint checkpoint = io::load_checkpoint(checkpoint_dir);
  task_.model().load_state_dict(checkpoint.model, /*strict=*/true);
  optimizer_.load_state(checkpoint.optimizer);
  task_.restore_state(checkpoint.state);
  runner_.set_steps_done(checkpoint.state.step());
  state_ = checkpoint.state;
  state_.clear_files();
  io::truncate_metrics_after_step(options_.run_dir / "metrics.jsonl", checkpoint.state.step());
  io::log_info("resumed from {} at step {} ({} tokens seen)", checkpoint_dir.string(),
               checkpoint.state.step(), checkpoint.state.tokens_seen());
}

fs::path Trainer::save(bool is_best) {
  io::Checkpoint checkpoint;
  checkpoint.model = task_.model().state_dict();
  checkpoint.optimizer = optimizer_.state_tensors();
  checkpoint.state = state_;
  checkpoint.state.set_step(runner_.steps_done());
  checkpoint.state.set_saved_unix_time(unix_now());
  task_.save_state(checkpoint.state);
  checkpoint.state.set_epoch(checkpoint.state.data_cursor().epoch());
  checkpoint.recipe_text = options_.recipe_text;
  checkpoint.extra_files = task_.checkpoint_files();
  io::CheckpointSaveOptions save_options;
  save_options.keep_last = options_.keep_checkpoints;
  save_options.is_best = is_best;
  const fs::path dir = io::save_checkpoint(options_.run_dir, checkpoint, save_options);
  io::log_info("checkpoint {}{}", dir.string(), is_best ? " (best so far)" : "");
  return dir;
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

TrainOutcome Trainer::run() {
  fs::create_directories(options_.run_dir);
  io::set_log_file(options_.run_dir / "train.log");
  // Stop writing this run's train.log however run() ends (return or exception).
  struct LogFileScope {
    ~LogFileScope() { io::set_log_file({}); }
  } log_file_scope;
  io::MetricsWriter metrics_writer(options_.run_dir / "metrics.jsonl");
  std::unique_ptr<io::TensorBoardWriter> tensorboard;
  if (options_.tensorboard) tensorboard = std::make_unique<io::TensorBoardWriter>(options_.run_dir);
  std::unique_ptr<StopSignalGuard> signals;
  if (options_.handle_signals) signals = std::make_unique<StopSignalGuard>();

  std::ofstream plain_log(options_.run_dir / "train.log", std::ios::app);
  io::ProgressOptions progress_options;
  progress_options.total_steps = options_.total_steps;
  progress_options.log_every = options_.log_every;
  progress_options.out = options_.progress_out;
  progress_options.terminal = options_.terminal;
  progress_options.on_log_step = [&](const std::string& line) {
    plain_log << io::format_log_line(io::LogLevel::kInfo, line, unix_now()) << '\n';
    plain_log.flush();
  };
  io::ProgressLine progress(progress_options);

  TrainOutcome outcome;
  nn::Module& model = task_.model();
  model.train();
  const auto started = std::chrono::steady_clock::now();
  const double wall_before = state_.wall_time_s();
  auto update_wall_time = [&] {
    state_.set_wall_time_s(
        wall_before +
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  };
  const int64_t first_step = runner_.steps_done() + 1;
  if (first_step > 1) io::log_info("continuing at step {}/{}", first_step, options_.total_steps);
  double tokens_in_window = 0;
  auto window_start = std::chrono::steady_clock::now();

  for (int64_t step = first_step; step <= options_.total_steps; ++step) {
    StepResult result;
    try {
      result = runner_.run([&] { return task_.next_micro_batch(); });
    } catch (const NonFiniteError& e) {
      progress.finish();
      const auto latest = io::find_latest(options_.run_dir);
      throw NonFiniteError(fmt::format(
          "{}\nTraining stopped; the parameters were not updated by this step. {}", e.what(),
          latest ? "The last good checkpoint is " + latest->string() +
                       " (lower the learning rate or add clipping, then resume or restart)"
                 : std::string("No checkpoint was written yet.")));
    }
    state_.set_tokens_seen(state_.tokens_seen() + result.tokens);
    tokens_in_window += static_cast<double>(result.tokens);
    progress.update({result.step, result.loss, result.lr, result.grad_norm, result.tokens});

    if (step % options_.log_every == 0 || step == options_.total_steps) {
      const auto now = std::chrono::steady_clock::now();
      const double seconds = std::chrono::duration<double>(now - window_start).count();
      const double tokens_per_s = seconds > 0 ? tokens_in_window / seconds : 0.0;
      tokens_in_window = 0;
      window_start = now;
      metrics_writer.write({{"step", step},
                            {"split", "train"},
                            {"loss", result.loss},
                            {"lr", result.lr},
                            {"grad_norm", result.grad_norm},
                            {"tokens_seen", state_.tokens_seen()},
                            {"tokens_per_s", tokens_per_s}});
      if (tensorboard) {
        tensorboard->add_scalars({{"train/loss", result.loss},
                                  {"train/lr", result.lr},
                                  {"train/grad_norm", result.grad_norm},
                                  {"train/tokens_per_s", tokens_per_s}},
                                 step);
      }
    }

    const bool last = step == options_.total_steps;
    bool is_best = false;
    if (last || (options_.eval_every > 0 && step % options_.eval_every == 0)) {
      progress.finish();
      outcome.final_metrics = evaluate_and_log(step);
      io::MetricRecord record{{"step", step}, {"split", "valid"}};
      std::vector<std::pair<std::string, double>> scalars;
      for (const auto& [name, value] : outcome.final_metrics) {
        record.emplace_back(name, value);
        scalars.emplace_back("valid/" + name, value);
      }
      metrics_writer.write(record);
      if (tensorboard) tensorboard->add_scalars(scalars, step);
      const double value = metric_value(outcome.final_metrics, options_.best_metric);
      if (improves(state_.best_eval(), value, options_.higher_is_better)) {
        io::BestEval* best = state_.mutable_best_eval();
        best->set_metric(options_.best_metric);
        best->set_value(value);
        best->set_step(step);
        best->set_higher_is_better(options_.higher_is_better);
        is_best = true;
      }
    }

    const int signal = StopSignalGuard::requested();
    const bool stop_requested =
        signal != 0 || (options_.stop_after_step > 0 && step >= options_.stop_after_step);
    if (last || is_best || stop_requested ||
        (options_.checkpoint_every > 0 && step % options_.checkpoint_every == 0)) {
      progress.finish();
      update_wall_time();
      outcome.last_checkpoint = save(is_best);
    }
    if (stop_requested && !last) {
      progress.finish();
      outcome.status = TrainStatus::kInterrupted;
      outcome.signal = signal;
      outcome.step = step;
      outcome.final_metrics.clear();
      if (signal != 0) {
        io::log_warn("{} received: stopped at step {}/{} after writing {}; continue with --resume",
                     signal_name(signal), step, options_.total_steps,
                     outcome.last_checkpoint.string());
      } else {
        io::log_info("stopped at step {}/{} as asked; continue with --resume", step,
                     options_.total_steps);
      }
      update_wall_time();
      outcome.wall_time_s = state_.wall_time_s();
      return outcome;
    }
  }
  progress.finish();
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
