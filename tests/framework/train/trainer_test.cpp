// Trainer: metrics and checkpoint cadence, best/latest, bit-exact resume, signals, non-finite
// stops.
#include "framework/train/trainer.h"

#include <signal.h>
#include <stdlib.h>

#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "framework/autograd/grad_mode.h"
#include "framework/autograd/ops/elementwise.h"
#include "framework/autograd/ops/reduce.h"
#include "framework/io/checkpoint.h"
#include "framework/io/checkpoint_paths.h"
#include "framework/io/log.h"
#include "framework/nn/linear.h"
#include "framework/optim/adam.h"
#include "framework/tensor/random.h"
#include "framework/train/stop_signal.h"
#include "tests/support/expect_error.h"
#include "tests/support/run_metrics.h"
#include "tests/support/temp_dir.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

using testing::expect_error;
using testing::memory_temp_base;
using testing::metrics_lines;

namespace fs = std::filesystem;
using nlohmann::json;

constexpr int64_t kInputs = 4;
constexpr int64_t kRows = 16;       // rows (tokens) per micro-batch
constexpr int64_t kNumBatches = 5;  // the data cursor wraps around: several epochs per run

struct Batch {
  Tensor x;  // [kRows, kInputs]
  Tensor y;  // [kRows, 1]
};

// y = x·(0.5, −1, 2, 0.25) + 0.3 + small noise, on `count` fixed batches.
std::vector<Batch> make_batches(uint64_t seed, int64_t count) {
  const double weights[kInputs] = {0.5, -1.0, 2.0, 0.25};
  Generator gen(seed);
  std::vector<Batch> batches;
  for (int64_t b = 0; b < count; ++b) {
    Batch batch{randn({kRows, kInputs}, gen), zeros({kRows, 1})};
    for (int64_t r = 0; r < kRows; ++r) {
      double target = 0.3 + 0.01 * gen.next_normal();
      for (int64_t i = 0; i < kInputs; ++i) target += weights[i] * batch.x.at({r, i});
      batch.y.set({r, 0}, target);
    }
    batches.push_back(batch);
  }
  return batches;
}

// Linear regression on a fixed list of batches. The data cursor counts micro-batches drawn;
// a "dropout" generator scales every input by U(0.8, 1.2) noise. Both are saved in checkpoints.
class RegressionTask : public train::TrainingTask {
 public:
  explicit RegressionTask(uint64_t init_seed = 7, uint64_t dropout_seed = 99)
      : init_gen_(init_seed),
        model_(nn::LinearOptions{kInputs, 1}, init_gen_),
        batches_(make_batches(11, kNumBatches)),
        valid_(make_batches(12, 1)[0]),
        dropout_(dropout_seed) {}

  nn::Module& model() override { return model_; }

  train::MicroBatch next_micro_batch() override {
    if (!model_.is_training() || !grad_enabled()) ++mode_errors;
    const Batch& batch = batches_[static_cast<size_t>(drawn_ % kNumBatches)];
    ++drawn_;
    if (on_draw) on_draw(drawn_);
    const Tensor keep = rand({kRows, kInputs}, dropout_, 0.8, 1.2);
    Variable loss =
        mean(square(model_.forward(Variable(batch.x) * Variable(keep)) - Variable(batch.y)));
    if (nan_from > 0 && drawn_ >= nan_from) loss = loss * std::nan("");
    return {loss, kRows};
  }

  train::Metrics evaluate() override {
    if (model_.is_training() || grad_enabled()) ++mode_errors;
    ++evaluations_;
    if (!scripted.empty()) return scripted.at(static_cast<size_t>(evaluations_ - 1));
    const double loss = valid_loss();
    return {{"loss", loss}, {"rmse", std::sqrt(loss)}};
  }

  void save_state(io::TrainState& state) const override {
    io::DataCursor* cursor = state.mutable_data_cursor();
    cursor->set_epoch(drawn_ / kNumBatches);
    cursor->set_position(drawn_ % kNumBatches);
    cursor->set_num_shards(1);
    io::save_rng_state(state, "dropout", dropout_);
  }

  void restore_state(const io::TrainState& state) override {
    drawn_ = state.data_cursor().epoch() * kNumBatches + state.data_cursor().position();
    io::restore_rng_state(state, "dropout", dropout_);
  }

  std::map<std::string, std::string> checkpoint_files() const override {
    return {{"task.txt", "linear regression"}};
  }

  double valid_loss() const {
    NoGradGuard no_grad;
    return mean(square(model_.forward(Variable(valid_.x)) - Variable(valid_.y))).item();
  }
  int64_t drawn() const { return drawn_; }
  const Generator& dropout() const { return dropout_; }

  /// Called with the 1-based index of each micro-batch as it is drawn.
  std::function<void(int64_t)> on_draw;
  /// From this micro-batch on (1-based; 0 = never) the loss is NaN.
  int64_t nan_from = 0;
  /// When set, evaluate() returns these in turn instead of the validation loss.
  std::vector<train::Metrics> scripted;
  /// Calls made in the wrong mode (training without gradients, evaluation with them).
  int mode_errors = 0;

 private:
  Generator init_gen_;
  nn::Linear model_;
  std::vector<Batch> batches_;
  Batch valid_;
  Generator dropout_;
  int64_t drawn_ = 0;
  int64_t evaluations_ = 0;
};

// A task with its AdamW optimizer (decay / no-decay groups) and a warm-up + cosine schedule.
struct TrainingRig {
  explicit TrainingRig(int64_t total_steps, uint64_t init_seed = 7, uint64_t dropout_seed = 99)
      : task(init_seed, dropout_seed),
        optimizer(optim::decay_param_groups(task.model().named_parameters(), 0.1, 0.01),
                  optim::AdamOptions{0.1, 0.01, 0.9, 0.99, 1e-8, true}),
        schedule(
            optim::make_schedule({optim::ScheduleName::kCosine, 0.1, 0.01, 2, 0.1, total_steps})) {}

  RegressionTask task;
  optim::AdamW optimizer;
  std::unique_ptr<optim::LrSchedule> schedule;
};

std::FILE* null_stream() {
  static std::FILE* stream = std::fopen("/dev/null", "w");
  return stream;
}

train::TrainerOptions quiet_options(const fs::path& run_dir, int64_t total_steps) {
  train::TrainerOptions options;
  options.run_dir = run_dir;
  options.total_steps = total_steps;
  options.log_every = 1;
  options.tensorboard = false;
  options.handle_signals = false;
  options.progress_out = null_stream();
  options.terminal = false;
  options.recipe_text = "model { linear {} }";
  options.seed = 5;
  return options;
}

std::vector<int64_t> steps_of(const std::vector<json>& lines) {
  std::vector<int64_t> steps;
  for (const json& line : lines) steps.push_back(line.at("step").get<int64_t>());
  return steps;
}

std::vector<int64_t> checkpoint_steps(const fs::path& run_dir) {
  std::vector<int64_t> steps;
  for (const auto& [step, dir] : io::list_checkpoints(run_dir)) steps.push_back(step);
  return steps;
}

fs::path step_dir(const fs::path& run_dir, int64_t step) {
  return io::checkpoints_dir(run_dir) / io::checkpoint_dir_name(step);
}

bool has_event_file(const fs::path& run_dir) {
  for (const auto& entry : fs::directory_iterator(run_dir)) {
    if (entry.path().filename().string().rfind("events.out.tfevents.", 0) == 0) return true;
  }
  return false;
}

std::string bytes_of(const Tensor& tensor) {
  const Tensor dense = tensor.contiguous();
  return {static_cast<const char*>(dense.raw_data()), dense.nbytes()};
}

// Names, dtypes, shapes and raw bytes of named tensors must all be equal.
template <typename Items>
void expect_bitwise_equal(const Items& actual, const Items& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  auto a = actual.begin();
  auto e = expected.begin();
  for (; a != actual.end(); ++a, ++e) {
    EXPECT_EQ(a->first, e->first);
    EXPECT_EQ(a->second.dtype(), e->second.dtype()) << a->first;
    EXPECT_EQ(a->second.shape(), e->second.shape()) << a->first;
    EXPECT_TRUE(bytes_of(a->second) == bytes_of(e->second)) << a->first << " differs";
  }
}

class TrainerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    io::set_log_console(nullptr);  // lines still go to train.log
    train::StopSignalGuard::clear();
  }
  void TearDown() override { io::set_log_console(stderr); }

  // On tmpfs when there is one: checkpoints fsync every file, which on a busy disk costs seconds
  // and is not what these tests are about (tests/io covers the writes).
  testing::TempDir temp_{memory_temp_base()};
};

TEST_F(TrainerTest, LossFallsAndMetricsFollowTheirCadence) {
  const int64_t total = 40, log_every = 3, eval_every = 7;
  TrainingRig setup(total);
  const double initial_valid_loss = setup.task.valid_loss();
  train::TrainerOptions options = quiet_options(temp_.path(), total);
  options.log_every = log_every;
  options.eval_every = eval_every;
  options.tensorboard = true;
  std::vector<double> step_losses;  // every step's loss, to recompute the smoothed one
  options.on_step = [&](const train::StepReport& report) {
    step_losses.push_back(report.loss);
    return true;
  };
  train::Trainer trainer(setup.task, setup.optimizer, *setup.schedule, options);
  const train::TrainOutcome outcome = trainer.run();

  EXPECT_EQ(outcome.status, train::TrainStatus::kFinished);
  EXPECT_EQ(outcome.step, total);
  EXPECT_EQ(trainer.step(), total);
  EXPECT_EQ(outcome.signal, 0);
  EXPECT_EQ(setup.task.mode_errors, 0);

  std::vector<int64_t> expected_train, expected_valid;
  for (int64_t step = 1; step <= total; ++step) {
    if (step % log_every == 0 || step == total) expected_train.push_back(step);
    if (step % eval_every == 0 || step == total) expected_valid.push_back(step);
  }
  const std::vector<json> train_lines = metrics_lines(temp_.path(), "train");
  const std::vector<json> valid_lines = metrics_lines(temp_.path(), "valid");
  EXPECT_EQ(steps_of(train_lines), expected_train);
  EXPECT_EQ(steps_of(valid_lines), expected_valid);
  for (const json& line : train_lines) {
    const int64_t step = line.at("step").get<int64_t>();
    EXPECT_EQ(line.at("tokens_seen").get<int64_t>(), step * kRows);
    EXPECT_EQ(line.at("lr").get<double>(), setup.schedule->lr(step));
    EXPECT_GT(line.at("grad_norm").get<double>(), 0.0);
    EXPECT_TRUE(line.contains("tokens_per_s"));
    // `loss` is this step's loss; `loss_ema` the console's smoothed loss: the bias-corrected
    // exponential moving average (decay 0.9) of every step's loss so far.
    ASSERT_EQ(step_losses.size(), static_cast<size_t>(total));
    EXPECT_EQ(line.at("loss").get<double>(), step_losses[step - 1]);
    double ema = 0;
    for (int64_t s = 0; s < step; ++s) ema = 0.9 * ema + 0.1 * step_losses[s];
    EXPECT_NEAR(line.at("loss_ema").get<double>(), ema / (1.0 - std::pow(0.9, step)),
                1e-12 * std::abs(ema))
        << "step " << step;
  }

  // The loss falls: train lines (whose input noise leaves a floor) and the validation loss
  // against the untrained model.
  ASSERT_GE(train_lines.size(), 2u);
  EXPECT_LT(train_lines.back().at("loss").get<double>(),
            0.2 * train_lines.front().at("loss").get<double>());
  const double final_valid_loss = train::metric_value(outcome.final_metrics, "loss");
  EXPECT_LT(final_valid_loss, 0.1 * initial_valid_loss);
  EXPECT_EQ(final_valid_loss, setup.task.valid_loss());
  EXPECT_EQ(valid_lines.back().at("loss").get<double>(), final_valid_loss);
  EXPECT_EQ(valid_lines.back().at("rmse").get<double>(),
            train::metric_value(outcome.final_metrics, "rmse"));

  EXPECT_GT(fs::file_size(temp_ / "train.log"), 0u);
  EXPECT_TRUE(has_event_file(temp_.path()));
}

TEST_F(TrainerTest, NoEventFileWithoutTensorBoard) {
  TrainingRig setup(4);
  train::TrainerOptions options = quiet_options(temp_.path(), 4);
  options.tensorboard = false;
  train::Trainer(setup.task, setup.optimizer, *setup.schedule, options).run();
  EXPECT_TRUE(fs::exists(temp_ / "metrics.jsonl"));
  EXPECT_TRUE(fs::exists(temp_ / "train.log"));
  EXPECT_FALSE(has_event_file(temp_.path()));
}

TEST_F(TrainerTest, PeriodicCheckpointsArePrunedAndLatestIsTheLast) {
  const int64_t total = 14, every = 3;
  for (int keep : {0, 2}) {
    SCOPED_TRACE("keep_checkpoints " + std::to_string(keep));
    const fs::path run_dir = temp_ / ("keep" + std::to_string(keep));
    TrainingRig setup(total);
    train::TrainerOptions options = quiet_options(run_dir, total);
    options.checkpoint_every = every;
    options.keep_checkpoints = keep;
    const train::TrainOutcome outcome =
        train::Trainer(setup.task, setup.optimizer, *setup.schedule, options).run();

    // Written: every multiple of `every`, and the end (also the best: the only evaluation).
    std::vector<int64_t> written;
    for (int64_t step = every; step <= total; step += every) written.push_back(step);
    written.push_back(total);
    const std::vector<int64_t> kept =
        keep == 0 ? written : std::vector<int64_t>(written.end() - keep, written.end());
    EXPECT_EQ(checkpoint_steps(run_dir), kept);

    EXPECT_EQ(outcome.last_checkpoint, step_dir(run_dir, total));
    ASSERT_TRUE(io::find_latest(run_dir).has_value());
    EXPECT_EQ(*io::find_latest(run_dir), step_dir(run_dir, total));
    const io::Checkpoint latest = io::load_checkpoint(*io::find_latest(run_dir));
    EXPECT_EQ(latest.state.step(), total);
    EXPECT_EQ(latest.state.tokens_seen(), total * kRows);
    EXPECT_EQ(latest.state.seed(), 5u);
    EXPECT_EQ(latest.state.epoch(), total / kNumBatches);
    EXPECT_EQ(latest.state.data_cursor().position(), total % kNumBatches);
    EXPECT_EQ(latest.recipe_text, options.recipe_text);
    EXPECT_EQ(latest.extra_files.at("task.txt"), "linear regression");
    expect_bitwise_equal(latest.model.items(), setup.task.model().state_dict().items());
    expect_bitwise_equal(latest.optimizer, setup.optimizer.state_tensors());
    // Every kept checkpoint is complete and holds its own step.
    for (const auto& [step, dir] : io::list_checkpoints(run_dir)) {
      EXPECT_EQ(io::load_checkpoint(dir).state.step(), step);
    }
  }
}

// Runs `total` steps evaluating every `eval_every` with scripted metrics; checks that `best`
// names the step of the best value of `metric` and that checkpoints were written at each
// improvement and at the end (and no others).
void check_best(const fs::path& run_dir, const std::vector<train::Metrics>& script,
                const std::string& metric, bool higher_is_better, int keep) {
  const int64_t eval_every = 2;
  const auto total = static_cast<int64_t>(script.size()) * eval_every;
  TrainingRig setup(total);
  setup.task.scripted = script;
  train::TrainerOptions options = quiet_options(run_dir, total);
  options.eval_every = eval_every;
  options.best_metric = metric;
  options.higher_is_better = higher_is_better;
  options.keep_checkpoints = keep;
  const train::TrainOutcome outcome =
      train::Trainer(setup.task, setup.optimizer, *setup.schedule, options).run();
  EXPECT_EQ(outcome.final_metrics, script.back());

  std::set<int64_t> improved;
  int64_t best_step = 0;
  double best_value = 0;
  for (size_t i = 0; i < script.size(); ++i) {
    const int64_t step = static_cast<int64_t>(i + 1) * eval_every;
    const double value = train::metric_value(script[i], metric);
    if (best_step == 0 || (higher_is_better ? value > best_value : value < best_value)) {
      best_step = step;
      best_value = value;
      improved.insert(step);
    }
  }
  std::set<int64_t> expected = improved;
  expected.insert(total);
  if (keep == 1) expected = {best_step, total};

  const std::vector<int64_t> steps = checkpoint_steps(run_dir);
  EXPECT_EQ(std::set<int64_t>(steps.begin(), steps.end()), expected);
  ASSERT_TRUE(io::find_best(run_dir).has_value());
  EXPECT_EQ(*io::find_best(run_dir), step_dir(run_dir, best_step));
  EXPECT_EQ(*io::find_latest(run_dir), step_dir(run_dir, total));
  for (const fs::path& dir : {*io::find_best(run_dir), *io::find_latest(run_dir)}) {
    const io::BestEval best = io::load_checkpoint(dir).state.best_eval();
    EXPECT_EQ(best.metric(), metric);
    EXPECT_EQ(best.value(), best_value);
    EXPECT_EQ(best.step(), best_step);
    EXPECT_EQ(best.higher_is_better(), higher_is_better);
  }
}

TEST_F(TrainerTest, BestPointsAtTheLowestLoss) {
  // The loss is lowest at the 4th evaluation (step 8); accuracy would pick the 2nd.
  const std::vector<train::Metrics> script = {{{"loss", 5.0}, {"accuracy", 0.1}},
                                              {{"loss", 3.0}, {"accuracy", 0.9}},
                                              {{"loss", 4.0}, {"accuracy", 0.2}},
                                              {{"loss", 2.0}, {"accuracy", 0.3}},
                                              {{"loss", 2.5}, {"accuracy", 0.4}}};
  {
    SCOPED_TRACE("keep all");
    check_best(temp_ / "all", script, "loss", false, 0);
  }
  {
    SCOPED_TRACE("keep 1: best survives pruning");
    check_best(temp_ / "one", script, "loss", false, 1);
  }
}

TEST_F(TrainerTest, BestPointsAtTheHighestAccuracyWhenHigherIsBetter) {
  // Accuracy peaks at the 2nd evaluation (step 4); the loss keeps falling.
  const std::vector<train::Metrics> script = {{{"loss", 5.0}, {"accuracy", 0.2}},
                                              {{"loss", 4.0}, {"accuracy", 0.9}},
                                              {{"loss", 3.0}, {"accuracy", 0.5}},
                                              {{"loss", 2.0}, {"accuracy", 0.6}},
                                              {{"loss", 1.0}, {"accuracy", 0.7}}};
  {
    SCOPED_TRACE("keep all");
    check_best(temp_ / "all", script, "accuracy", true, 0);
  }
  {
    SCOPED_TRACE("keep 1: best survives pruning");
    check_best(temp_ / "one", script, "accuracy", true, 1);
  }
}

TEST_F(TrainerTest, UnknownBestMetricThrowsNamingTheKeys) {
  TrainingRig setup(3);
  train::TrainerOptions options = quiet_options(temp_.path(), 3);
  options.best_metric = "f1";
  train::Trainer trainer(setup.task, setup.optimizer, *setup.schedule, options);
  expect_error([&] { trainer.run(); }, {"'f1'", "loss, rmse"});
  io::set_log_file({});
}

// Early stopping computed independently of the trainer: the step of the evaluation that ends a
// run of `script` (evaluations every `eval_every` steps), 0 when none does before the last.
int64_t expected_early_stop(const std::vector<train::Metrics>& script, const std::string& metric,
                            bool higher_is_better, double min_delta, int patience,
                            int64_t eval_every) {
  bool has_reference = false;
  double reference = 0;
  int stale = 0;
  for (size_t i = 0; i + 1 < script.size(); ++i) {  // the last evaluation ends the run anyway
    const double value = train::metric_value(script[i], metric);
    const double gain = higher_is_better ? value - reference : reference - value;
    if (!has_reference || gain > min_delta) {
      has_reference = true;
      reference = value;
      stale = 0;
    } else if (++stale >= patience) {
      return static_cast<int64_t>(i + 1) * eval_every;
    }
  }
  return 0;
}

struct EarlyStoppingCase {
  std::vector<train::Metrics> script;
  std::string metric;
  bool higher_is_better;
  double min_delta;
  int patience;
};

class TrainerEarlyStopping : public TrainerTest,
                             public ::testing::WithParamInterface<EarlyStoppingCase> {};

// The run ends, as finished, at the evaluation the count says, with a checkpoint there that
// records it; the best checkpoint stays the best of any improvement; resuming a stopped run
// trains no further; a run interrupted before that point and resumed stops at the same step.
TEST_P(TrainerEarlyStopping, EndsAfterPatienceEvaluationsWithoutAnImprovementOfMinDelta) {
  const EarlyStoppingCase& c = GetParam();
  const int64_t eval_every = 2;
  const auto total = static_cast<int64_t>(c.script.size()) * eval_every;
  const int64_t stop = expected_early_stop(c.script, c.metric, c.higher_is_better, c.min_delta,
                                           c.patience, eval_every);
  auto options_for = [&](const fs::path& dir) {
    train::TrainerOptions options = quiet_options(dir, total);
    options.eval_every = eval_every;
    options.best_metric = c.metric;
    options.higher_is_better = c.higher_is_better;
    options.early_stopping_patience = c.patience;
    options.early_stopping_min_delta = c.min_delta;
    return options;
  };
  TrainingRig whole(total);
  whole.task.scripted = c.script;
  const fs::path dir = temp_ / "whole";
  const train::TrainOutcome outcome =
      train::Trainer(whole.task, whole.optimizer, *whole.schedule, options_for(dir)).run();
  EXPECT_EQ(outcome.status, train::TrainStatus::kFinished);
  EXPECT_EQ(outcome.stopped_early, stop > 0);
  const int64_t end = stop > 0 ? stop : total;
  EXPECT_EQ(outcome.step, end);
  EXPECT_EQ(whole.task.drawn(), end);
  EXPECT_EQ(*io::find_latest(dir), step_dir(dir, end));
  const io::TrainState state = io::load_checkpoint(*io::find_latest(dir)).state;
  EXPECT_EQ(state.early_stopping().stopped(), stop > 0);
  // The best checkpoint: any improvement, up to the end.
  int64_t best_step = 0;
  double best = 0;
  for (int64_t k = 0; k * eval_every < end; ++k) {
    const double value = train::metric_value(c.script[static_cast<size_t>(k)], c.metric);
    if (best_step == 0 || (c.higher_is_better ? value > best : value < best)) {
      best = value;
      best_step = (k + 1) * eval_every;
    }
  }
  EXPECT_EQ(*io::find_best(dir), step_dir(dir, best_step));
  if (stop == 0) return;

  // Resuming the stopped run trains no further.
  TrainingRig again(total);
  again.task.scripted = {c.script[static_cast<size_t>(stop / eval_every - 1)]};
  train::Trainer resumed_stopped(again.task, again.optimizer, *again.schedule, options_for(dir));
  resumed_stopped.resume(*io::find_latest(dir));
  const train::TrainOutcome still = resumed_stopped.run();
  EXPECT_TRUE(still.stopped_early);
  EXPECT_EQ(still.step, stop);
  EXPECT_EQ(again.task.drawn(), stop);

  // Interrupted one evaluation before the stop, then resumed: the count goes on.
  const fs::path split_dir = temp_ / "split";
  const int64_t interrupt = stop - eval_every;
  {
    TrainingRig first(total);
    first.task.scripted = c.script;
    train::TrainerOptions options = options_for(split_dir);
    options.stop_after_step = interrupt;
    EXPECT_EQ(train::Trainer(first.task, first.optimizer, *first.schedule, options).run().status,
              train::TrainStatus::kInterrupted);
  }
  TrainingRig second(total);
  second.task.scripted.assign(c.script.begin() + interrupt / eval_every, c.script.end());
  train::Trainer continued(second.task, second.optimizer, *second.schedule, options_for(split_dir));
  continued.resume(*io::find_latest(split_dir));
  const train::TrainOutcome resumed = continued.run();
  EXPECT_TRUE(resumed.stopped_early);
  EXPECT_EQ(resumed.step, stop);
  expect_bitwise_equal(second.task.model().state_dict().items(),
                       whole.task.model().state_dict().items());
}

INSTANTIATE_TEST_SUITE_P(
    Scripts, TrainerEarlyStopping,
    ::testing::Values(
        // Improvements smaller than min_delta do not reset the count: stops at the 4th.
        EarlyStoppingCase{{{{"loss", 5.0}},
                           {{"loss", 4.0}},
                           {{"loss", 3.95}},
                           {{"loss", 3.92}},
                           {{"loss", 1.0}},
                           {{"loss", 0.5}}},
                          "loss",
                          false,
                          0.1,
                          2},
        // Higher is better; a worse value in between counts as stale; stops at the 5th.
        EarlyStoppingCase{{{{"accuracy", 0.5}},
                           {{"accuracy", 0.7}},
                           {{"accuracy", 0.6}},
                           {{"accuracy", 0.71}},
                           {{"accuracy", 0.705}},
                           {{"accuracy", 0.99}},
                           {{"accuracy", 0.99}}},
                          "accuracy",
                          true,
                          0.05,
                          3},
        // Never patience evaluations in a row: runs to the end.
        EarlyStoppingCase{{{{"loss", 5.0}},
                           {{"loss", 5.0}},
                           {{"loss", 4.0}},
                           {{"loss", 4.5}},
                           {{"loss", 3.0}},
                           {{"loss", 3.0}}},
                          "loss",
                          false,
                          0.0,
                          2}));

// The lines as text, without the timing field, so that runs can be compared line by line.
std::vector<std::string> without_timing(const std::vector<json>& lines) {
  std::vector<std::string> texts;
  for (json line : lines) {
    line.erase("tokens_per_s");
    texts.push_back(line.dump());
  }
  return texts;
}

TEST_F(TrainerTest, ResumeIsBitExact) {
  const int64_t total = 17, stop_at = 8;
  auto options_for = [&](const fs::path& run_dir) {
    train::TrainerOptions options = quiet_options(run_dir, total);
    options.eval_every = 5;
    options.checkpoint_every = 6;
    options.step.grad_accumulation = 2;  // the cursor wraps around the 5 batches
    options.step.clip_norm = 0.5;
    return options;
  };

  // A: straight through.
  const fs::path dir_a = temp_ / "a";
  TrainingRig a(total);
  const train::TrainOutcome outcome_a =
      train::Trainer(a.task, a.optimizer, *a.schedule, options_for(dir_a)).run();
  ASSERT_EQ(outcome_a.status, train::TrainStatus::kFinished);

  // B: stopped after `stop_at` steps...
  const fs::path dir_b = temp_ / "b";
  {
    TrainingRig b(total);
    train::TrainerOptions options = options_for(dir_b);
    options.stop_after_step = stop_at;
    const train::TrainOutcome stopped =
        train::Trainer(b.task, b.optimizer, *b.schedule, options).run();
    EXPECT_EQ(stopped.status, train::TrainStatus::kInterrupted);
    EXPECT_EQ(stopped.step, stop_at);
    EXPECT_EQ(stopped.signal, 0);
    EXPECT_TRUE(stopped.final_metrics.empty());
    EXPECT_EQ(stopped.last_checkpoint, step_dir(dir_b, stop_at));
    EXPECT_EQ(*io::find_latest(dir_b), step_dir(dir_b, stop_at));
    EXPECT_EQ(b.task.drawn(), 2 * stop_at);
  }
  // ... a crashed process had logged past the checkpoint ...
  {
    std::ofstream out(dir_b / "metrics.jsonl", std::ios::app);
    out << R"({"step":)" << stop_at + 2 << R"(,"split":"train","loss":999.0})" << '\n';
    out << R"({"step":)" << stop_at + 3 << R"(,"split":"valid","loss":999.0})" << '\n';
  }
  // ... and continued by fresh objects whose own seeds differ (the checkpoint must win).
  TrainingRig resumed(total, /*init_seed=*/1234, /*dropout_seed=*/4321);
  train::Trainer trainer(resumed.task, resumed.optimizer, *resumed.schedule, options_for(dir_b));
  trainer.resume(*io::find_latest(dir_b));
  EXPECT_EQ(trainer.step(), stop_at);
  const train::TrainOutcome outcome_b = trainer.run();
  ASSERT_EQ(outcome_b.status, train::TrainStatus::kFinished);
  EXPECT_EQ(outcome_b.step, total);

  expect_bitwise_equal(resumed.task.model().state_dict().items(),
                       a.task.model().state_dict().items());
  expect_bitwise_equal(resumed.optimizer.state_tensors(), a.optimizer.state_tensors());
  EXPECT_EQ(resumed.optimizer.step_count(), a.optimizer.step_count());
  EXPECT_EQ(resumed.task.drawn(), a.task.drawn());
  EXPECT_EQ(resumed.task.dropout().state(), a.task.dropout().state());
  EXPECT_EQ(outcome_b.final_metrics, outcome_a.final_metrics);

  const std::vector<json> train_a = metrics_lines(dir_a, "train");
  const std::vector<json> train_b = metrics_lines(dir_b, "train");
  ASSERT_EQ(train_a.size(), static_cast<size_t>(total));
  EXPECT_EQ(without_timing(train_b), without_timing(train_a));
  EXPECT_EQ(without_timing(metrics_lines(dir_b, "valid")),
            without_timing(metrics_lines(dir_a, "valid")));
  for (const json& line : metrics_lines(dir_b, "train")) {
    EXPECT_NE(line.at("loss").get<double>(), 999.0);
  }

  EXPECT_EQ(checkpoint_steps(dir_b), checkpoint_steps(dir_a));
  EXPECT_EQ(io::find_best(dir_b)->filename(), io::find_best(dir_a)->filename());
  const io::Checkpoint last_a = io::load_checkpoint(*io::find_latest(dir_a));
  const io::Checkpoint last_b = io::load_checkpoint(*io::find_latest(dir_b));
  EXPECT_EQ(last_b.state.tokens_seen(), last_a.state.tokens_seen());
  EXPECT_EQ(last_b.state.best_eval().SerializeAsString(),
            last_a.state.best_eval().SerializeAsString());
  EXPECT_EQ(last_b.state.rng_states(0).SerializeAsString(),
            last_a.state.rng_states(0).SerializeAsString());
}

int g_previous_handler_calls = 0;
extern "C" void previous_handler(int) {
  ++g_previous_handler_calls;
}

// Installs `previous_handler` for SIGINT and SIGTERM; restores what was there on destruction.
class PreviousHandlers {
 public:
  PreviousHandlers() {
    struct sigaction action {};
    action.sa_handler = previous_handler;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, &original_int_);
    sigaction(SIGTERM, &action, &original_term_);
    g_previous_handler_calls = 0;
  }
  ~PreviousHandlers() {
    sigaction(SIGINT, &original_int_, nullptr);
    sigaction(SIGTERM, &original_term_, nullptr);
  }
  static bool installed(int signal) {
    struct sigaction now {};
    sigaction(signal, nullptr, &now);
    return now.sa_handler == previous_handler;
  }

 private:
  struct sigaction original_int_ {};
  struct sigaction original_term_ {};
};

class TrainerSignalTest : public TrainerTest, public ::testing::WithParamInterface<int> {};

TEST_P(TrainerSignalTest, SignalCheckpointsAndStopsCleanly) {
  const int signal = GetParam();
  const int64_t total = 20, signal_step = 6;
  PreviousHandlers previous;
  TrainingRig setup(total);
  setup.task.on_draw = [&](int64_t drawn) {
    if (drawn == signal_step) std::raise(signal);
  };
  train::TrainerOptions options = quiet_options(temp_.path(), total);
  options.handle_signals = true;
  options.checkpoint_every = 4;
  const train::TrainOutcome outcome =
      train::Trainer(setup.task, setup.optimizer, *setup.schedule, options).run();

  // Still alive, and the signal went to the trainer's handler, not the previous one.
  EXPECT_EQ(g_previous_handler_calls, 0);
  EXPECT_EQ(outcome.status, train::TrainStatus::kInterrupted);
  EXPECT_EQ(outcome.signal, signal);
  EXPECT_EQ(outcome.step, signal_step);
  EXPECT_EQ(outcome.last_checkpoint, step_dir(temp_.path(), signal_step));
  ASSERT_TRUE(io::find_latest(temp_.path()).has_value());
  EXPECT_EQ(*io::find_latest(temp_.path()), step_dir(temp_.path(), signal_step));
  const io::Checkpoint checkpoint = io::load_checkpoint(outcome.last_checkpoint);
  EXPECT_EQ(checkpoint.state.step(), signal_step);
  expect_bitwise_equal(checkpoint.model.items(), setup.task.model().state_dict().items());
  EXPECT_EQ(steps_of(metrics_lines(temp_.path(), "train")).back(), signal_step);

  // The handlers from before run() are back.
  EXPECT_TRUE(PreviousHandlers::installed(SIGINT));
  EXPECT_TRUE(PreviousHandlers::installed(SIGTERM));
}

TEST_P(TrainerSignalTest, NextRunWithoutHandlersIgnoresTheOldSignal) {
  const int signal = GetParam();
  PreviousHandlers previous;
  {
    TrainingRig setup(10);
    setup.task.on_draw = [&](int64_t drawn) {
      if (drawn == 3) std::raise(signal);
    };
    train::TrainerOptions options = quiet_options(temp_ / "first", 10);
    options.handle_signals = true;
    ASSERT_EQ(train::Trainer(setup.task, setup.optimizer, *setup.schedule, options).run().signal,
              signal);
  }
  // No signal arrives during this run: it must not stop because of the earlier one.
  TrainingRig setup(10);
  const train::TrainOutcome outcome = train::Trainer(setup.task, setup.optimizer, *setup.schedule,
                                                     quiet_options(temp_ / "second", 10))
                                          .run();
  EXPECT_EQ(outcome.status, train::TrainStatus::kFinished);
  EXPECT_EQ(outcome.signal, 0);
  EXPECT_EQ(outcome.step, 10);
}

INSTANTIATE_TEST_SUITE_P(Signals, TrainerSignalTest, ::testing::Values(SIGINT, SIGTERM),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return std::string(info.param == SIGINT ? "SIGINT" : "SIGTERM");
                         });

TEST(StopSignalGuard, RecordsTheFirstSignalAndRestoresHandlers) {
  PreviousHandlers previous;
  {
    train::StopSignalGuard guard;
    EXPECT_FALSE(PreviousHandlers::installed(SIGINT));
    EXPECT_FALSE(PreviousHandlers::installed(SIGTERM));
    EXPECT_EQ(train::StopSignalGuard::requested(), 0);
    std::raise(SIGTERM);
    EXPECT_EQ(train::StopSignalGuard::requested(), SIGTERM);
    train::StopSignalGuard::clear();
    EXPECT_EQ(train::StopSignalGuard::requested(), 0);
    std::raise(SIGINT);
    EXPECT_EQ(train::StopSignalGuard::requested(), SIGINT);
  }
  // Forgotten with the guard: a later run without one must not see it.
  EXPECT_EQ(train::StopSignalGuard::requested(), 0);
  EXPECT_EQ(g_previous_handler_calls, 0);
  EXPECT_TRUE(PreviousHandlers::installed(SIGINT));
  EXPECT_TRUE(PreviousHandlers::installed(SIGTERM));
}

TEST(StopSignalGuard, SecondGuardAtTheSameTimeThrows) {
  PreviousHandlers previous;
  {
    train::StopSignalGuard first;
    EXPECT_THROW(train::StopSignalGuard second, Error);
    // The failed second guard did not uninstall the first one.
    EXPECT_FALSE(PreviousHandlers::installed(SIGINT));
  }
  EXPECT_TRUE(PreviousHandlers::installed(SIGINT));
  // Once the first is gone, a new guard is allowed.
  EXPECT_NO_THROW(train::StopSignalGuard again);
  EXPECT_TRUE(PreviousHandlers::installed(SIGINT));
}

TEST(StopSignalGuardDeathTest, SecondSignalKillsTheProcess) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        train::StopSignalGuard guard;
        std::raise(SIGINT);
        std::raise(SIGINT);
      },
      ::testing::KilledBySignal(SIGINT), "");
}

TEST_F(TrainerTest, NonFiniteLossStopsAtTheLastGoodCheckpoint) {
  const int64_t total = 12, nan_step = 8;
  PreviousHandlers previous;
  TrainingRig setup(total);
  setup.task.nan_from = nan_step;
  train::TrainerOptions options = quiet_options(temp_.path(), total);
  options.checkpoint_every = 3;
  options.handle_signals = true;
  train::Trainer trainer(setup.task, setup.optimizer, *setup.schedule, options);
  const fs::path last_good = step_dir(temp_.path(), 6);
  try {
    trainer.run();
    FAIL() << "expected NonFiniteError";
  } catch (const train::NonFiniteError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("at step " + std::to_string(nan_step)), std::string::npos) << message;
    EXPECT_NE(message.find(last_good.string()), std::string::npos) << message;
  }
  io::set_log_file({});
  EXPECT_EQ(trainer.step(), nan_step - 1);
  EXPECT_TRUE(PreviousHandlers::installed(SIGINT));
  EXPECT_TRUE(PreviousHandlers::installed(SIGTERM));

  ASSERT_TRUE(io::find_latest(temp_.path()).has_value());
  EXPECT_EQ(*io::find_latest(temp_.path()), last_good);
  const io::Checkpoint checkpoint = io::load_checkpoint(last_good);
  EXPECT_EQ(checkpoint.state.step(), 6);
  // Step 7 updated the parameters after that checkpoint; step 8 did not touch them.
  const StateDict live = setup.task.model().state_dict();
  bool any_differs = false;
  for (const auto& [name, tensor] : checkpoint.model) {
    any_differs = any_differs || bytes_of(tensor) != bytes_of(live.at(name));
  }
  EXPECT_TRUE(any_differs);

  // Loading the last good checkpoint into a fresh model works and gives its weights back.
  TrainingRig fresh(total, 31);
  fresh.task.model().load_state_dict(checkpoint.model, /*strict=*/true);
  fresh.optimizer.load_state(checkpoint.optimizer);
  expect_bitwise_equal(fresh.task.model().state_dict().items(), checkpoint.model.items());
  expect_bitwise_equal(fresh.optimizer.state_tensors(), checkpoint.optimizer);
}

TEST_F(TrainerTest, NonFiniteLossOnACheckpointStepLeavesExactlyThoseParameters) {
  // NaN right after a checkpoint: the live parameters are those of the checkpoint.
  const int64_t total = 12;
  TrainingRig setup(total);
  setup.task.nan_from = 7;
  train::TrainerOptions options = quiet_options(temp_.path(), total);
  options.checkpoint_every = 6;
  train::Trainer trainer(setup.task, setup.optimizer, *setup.schedule, options);
  EXPECT_THROW(trainer.run(), train::NonFiniteError);
  io::set_log_file({});
  const io::Checkpoint checkpoint = io::load_checkpoint(*io::find_latest(temp_.path()));
  EXPECT_EQ(checkpoint.state.step(), 6);
  expect_bitwise_equal(setup.task.model().state_dict().items(), checkpoint.model.items());
  expect_bitwise_equal(setup.optimizer.state_tensors(), checkpoint.optimizer);
}

TEST_F(TrainerTest, NonFiniteLossBeforeAnyCheckpointSaysSo) {
  TrainingRig setup(10);
  setup.task.nan_from = 2;
  train::Trainer trainer(setup.task, setup.optimizer, *setup.schedule,
                         quiet_options(temp_.path(), 10));
  try {
    trainer.run();
    FAIL() << "expected NonFiniteError";
  } catch (const train::NonFiniteError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("at step 2"), std::string::npos) << message;
    EXPECT_NE(message.find("No checkpoint was written yet"), std::string::npos) << message;
  }
  io::set_log_file({});
  EXPECT_FALSE(io::find_latest(temp_.path()).has_value());
}

TEST(MetricValue, ReturnsThePresentKeyAndNamesTheKeysWhenAbsent) {
  const train::Metrics metrics = {{"loss", 1.5}, {"accuracy", 0.75}, {"mcc", -0.25}};
  EXPECT_EQ(train::metric_value(metrics, "loss"), 1.5);
  EXPECT_EQ(train::metric_value(metrics, "accuracy"), 0.75);
  EXPECT_EQ(train::metric_value(metrics, "mcc"), -0.25);
  expect_error([&] { train::metric_value(metrics, "f1"); }, {"f1", "loss, accuracy, mcc"});
  EXPECT_THROW(train::metric_value({}, "loss"), Error);
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
