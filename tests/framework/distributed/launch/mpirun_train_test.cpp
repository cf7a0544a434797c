// `mpirun -np N rota train` end to end on the tiny recipes: 2 ranks equal one process with the same
// global batch (bit for bit against gradient accumulation, to float tolerance against one big
// micro-batch, evaluations included), replicas identical at every checkpoint, resume with the
// same or another number of ranks, a signal to one rank stops all at the same step, a dead or
// failing rank ends the job, recipe errors are reported once.
#include <signal.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "framework/base/directory_lock.h"
#include "framework/io/checkpoint.h"
#include "framework/io/checkpoint_paths.h"
#include "framework/io/safetensors.h"
#include "tests/framework/distributed/launch/child_process.h"
#include "tests/support/run_metrics.h"
#include "tests/support/source_tree.h"
#include "tests/support/temp_dir.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

namespace fs = std::filesystem;
using rota::testing::TempDir;
using testing::ChildProcess;
using testing::ChildResult;
using testing::run_child;

constexpr double kTimeoutS = 240;  // a slow, shared machine; a hang shows up as a timeout

const std::map<std::string, std::string> kEnv = {{"OMP_NUM_THREADS", "1"},
                                                 {"OMP_WAIT_POLICY", "passive"}};

std::vector<std::string> train_args(const std::string& recipe, const fs::path& out,
                                    const std::vector<std::string>& overrides,
                                    const std::vector<std::string>& extra = {}) {
  std::vector<std::string> args = {
      ROTA_BINARY, "train", std::string(ROTA_SOURCE_DIR) + "/recipes/tests/" + recipe + ".txtpb",
      "--out", out.string()};
  for (const std::string& o : overrides) {
    args.push_back("--set");
    args.push_back(o);
  }
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

std::vector<std::string> mpirun(int ranks, const std::vector<std::string>& command) {
  std::vector<std::string> args = {ROTA_MPIEXEC, "--allow-run-as-root", "--oversubscribe", "-np",
                                   std::to_string(ranks)};
  args.insert(args.end(), command.begin(), command.end());
  return args;
}

ChildResult run(const std::vector<std::string>& argv, const fs::path& log) {
  ChildResult result = run_child(argv, kEnv, log, kTimeoutS);
  EXPECT_FALSE(result.timed_out) << result.output;
  return result;
}

void expect_success(const std::vector<std::string>& argv, const fs::path& log) {
  const ChildResult result = run(argv, log);
  ASSERT_EQ(result.exit_code, 0) << result.output;
}

io::Checkpoint latest_checkpoint(const fs::path& run) {
  const auto dir = io::find_latest(run);
  EXPECT_TRUE(dir.has_value()) << run;
  return io::load_checkpoint(dir.value_or(run));
}

// Largest |a - b| over the weights, and whether all are bitwise equal.
struct WeightDifference {
  double max_abs = 0;
  double max_magnitude = 0;
  bool bitwise_equal = true;
};

WeightDifference compare_weights(const io::Checkpoint& a, const io::Checkpoint& b) {
  WeightDifference diff;
  EXPECT_EQ(a.model.size(), b.model.size());
  for (const auto& [name, tensor] : a.model) {
    const Tensor other = b.model.at(name);
    const std::vector<double> x = tensor.to_double_vector(), y = other.to_double_vector();
    EXPECT_EQ(x.size(), y.size()) << name;
    for (size_t i = 0; i < std::min(x.size(), y.size()); ++i) {
      diff.bitwise_equal &= x[i] == y[i];
      diff.max_abs = std::max(diff.max_abs, std::abs(x[i] - y[i]));
      diff.max_magnitude = std::max(diff.max_magnitude, std::abs(x[i]));
    }
  }
  return diff;
}

bool optimizer_states_equal(const io::Checkpoint& a, const io::Checkpoint& b) {
  if (a.optimizer.size() != b.optimizer.size()) return false;
  for (size_t i = 0; i < a.optimizer.size(); ++i) {
    if (a.optimizer[i].first != b.optimizer[i].first ||
        a.optimizer[i].second.to_double_vector() != b.optimizer[i].second.to_double_vector()) {
      return false;
    }
  }
  return true;
}

int count_lines_with(const fs::path& file, const std::string& text) {
  std::ifstream in(file);
  std::string line;
  int count = 0;
  while (std::getline(in, line)) count += line.find(text) != std::string::npos;
  return count;
}

// 6 steps, evaluations at 3 and 6, checkpoints at 2, 4, 6 (and the best).
const std::vector<std::string> kShortRun = {"train.steps=6", "train.eval_every=3",
                                            "train.checkpoint_every=2", "train.log_every=1",
                                            "train.keep_checkpoints=10"};

std::vector<std::string> with(std::vector<std::string> base, const std::vector<std::string>& more) {
  base.insert(base.end(), more.begin(), more.end());
  return base;
}

TEST(MpirunTrain, TwoRanksAreBitIdenticalToOneProcessAccumulatingTheirTwoMicroBatches) {
  TempDir tmp;
  // Global batch 4: 2 ranks x 2 sequences, against 1 process x 2 micro-batches of 2.
  expect_success(mpirun(2, train_args("tiny_causal_lm", tmp / "two", kShortRun)), tmp / "two.log");
  expect_success(
      train_args("tiny_causal_lm", tmp / "one", with(kShortRun, {"train.gradient_accumulation=2"})),
      tmp / "one.log");
  const io::Checkpoint two = latest_checkpoint(tmp / "two"), one = latest_checkpoint(tmp / "one");
  EXPECT_EQ(two.state.step(), 6);
  EXPECT_TRUE(compare_weights(two, one).bitwise_equal);
  EXPECT_TRUE(optimizer_states_equal(two, one));
  EXPECT_EQ(two.state.tokens_seen(), one.state.tokens_seen());
  EXPECT_EQ(two.state.data_cursor().position(), one.state.data_cursor().position());
  EXPECT_EQ(two.state.data_cursor().num_shards(), 2);
  // The logged training losses and the (sharded) evaluations are the same numbers.
  const auto train_two = testing::metrics_lines(tmp / "two", "train"),
             train_one = testing::metrics_lines(tmp / "one", "train");
  ASSERT_EQ(train_two.size(), 6u);
  ASSERT_EQ(train_one.size(), 6u);
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(train_two[i]["loss"], train_one[i]["loss"]) << "step " << i + 1;
    EXPECT_EQ(train_two[i]["tokens_seen"], train_one[i]["tokens_seen"]);
    EXPECT_EQ(train_two[i]["world_size"], 2);
    EXPECT_GE(train_two[i]["allreduce_s"].get<double>(), 0.0);
    EXPECT_FALSE(train_one[i].contains("allreduce_s"));
  }
  // (The evaluations differ: an evaluation batch holds batch_size / gradient_accumulation
  // sequences, 4 here and 2 there. tests/framework/distributed/mpi/task_mpi_test.cpp compares
  // sharded and single-process evaluation of the same recipe bit for bit.)
  ASSERT_EQ(testing::metrics_lines(tmp / "two", "valid").size(), 2u);
  // Every checkpoint compared the replicas (and they matched, or the run would have failed).
  const int checkpoints = count_lines_with(tmp / "two" / "train.log", "INFO  checkpoint ");
  EXPECT_GE(checkpoints, 3);
  EXPECT_EQ(count_lines_with(tmp / "two" / "train.log", "2 ranks hold identical weights"),
            checkpoints);
  // Only rank 0 wrote: one header line, one final line.
  EXPECT_EQ(count_lines_with(tmp / "two" / "train.log", "rota train "), 1);
}

TEST(MpirunTrain, TwoRanksOnAPreparedDirectoryAreBitIdenticalToTwoRanksOnTheText) {
  // Every rank maps the prepared shards; the loader shards the windows as for the text.
  TempDir tmp;
  const fs::path prepared = tmp / "prepared";
  expect_success({ROTA_BINARY, "data", "prepare",
                  std::string(ROTA_SOURCE_DIR) + "/recipes/tests/tiny_causal_lm.txtpb", "--out",
                  prepared.string(), "--shard-mb", "1"},
                 tmp / "prepare.log");
  expect_success(mpirun(2, train_args("tiny_causal_lm", tmp / "text", kShortRun)),
                 tmp / "text.log");
  expect_success(mpirun(2, train_args("tiny_causal_lm", tmp / "prepared_run",
                                      with(kShortRun, {"data.prepared=" + prepared.string()}))),
                 tmp / "prepared_run.log");
  const io::Checkpoint a = latest_checkpoint(tmp / "text"),
                       b = latest_checkpoint(tmp / "prepared_run");
  EXPECT_EQ(b.state.step(), 6);
  EXPECT_TRUE(compare_weights(a, b).bitwise_equal);
  EXPECT_TRUE(optimizer_states_equal(a, b));
  EXPECT_EQ(a.state.data_cursor().position(), b.state.data_cursor().position());
  const auto valid_a = testing::metrics_lines(tmp / "text", "valid"),
             valid_b = testing::metrics_lines(tmp / "prepared_run", "valid");
  ASSERT_EQ(valid_a.size(), valid_b.size());
  for (size_t i = 0; i < valid_a.size(); ++i) EXPECT_EQ(valid_a[i]["loss"], valid_b[i]["loss"]);
}

TEST(MpirunTrain, TwoRanksMatchOneProcessWithOneBigMicroBatchToFloatTolerance) {
  TempDir tmp;
  // SGD with momentum: the weights move in proportion to the gradients, so float-level
  // differences of the gradients (2 x 2 sequences against 4 in one batch) stay float-level.
  const std::vector<std::string> sgd =
      with(kShortRun, {"optimizer.sgd.momentum=0.5", "schedule.lr=0.3"});
  expect_success(mpirun(2, train_args("tiny_causal_lm", tmp / "two", sgd)), tmp / "two.log");
  expect_success(train_args("tiny_causal_lm", tmp / "one", sgd), tmp / "one.log");
  expect_success(train_args("tiny_causal_lm", tmp / "init", with(sgd, {"train.steps=1"})),
                 tmp / "init.log");
  const io::Checkpoint two = latest_checkpoint(tmp / "two"), one = latest_checkpoint(tmp / "one");
  const WeightDifference diff = compare_weights(two, one);
  // The runs moved the weights by far more than they differ.
  const WeightDifference moved = compare_weights(one, latest_checkpoint(tmp / "init"));
  EXPECT_LT(diff.max_abs, 1e-5 * std::max(1.0, diff.max_magnitude)) << diff.max_abs;
  EXPECT_GT(moved.max_abs, 1000 * diff.max_abs);
  const auto valid_two = testing::metrics_lines(tmp / "two", "valid"),
             valid_one = testing::metrics_lines(tmp / "one", "valid");
  ASSERT_EQ(valid_two.size(), valid_one.size());
  for (size_t i = 0; i < valid_one.size(); ++i) {
    EXPECT_NEAR(valid_two[i]["loss"].get<double>(), valid_one[i]["loss"].get<double>(), 1e-5);
  }
}

TEST(MpirunTrain, ResumingWithTheSameRanksIsBitExactWithDropout) {
  TempDir tmp;
  const std::vector<std::string> dropout = with(kShortRun, {"model.dropout=0.1"});
  expect_success(mpirun(2, train_args("tiny_causal_lm", tmp / "straight", dropout)),
                 tmp / "straight.log");
  expect_success(
      mpirun(2, train_args("tiny_causal_lm", tmp / "resumed", dropout, {"--stop-after", "3"})),
      tmp / "stop.log");
  EXPECT_EQ(latest_checkpoint(tmp / "resumed").state.step(), 3);
  EXPECT_EQ(latest_checkpoint(tmp / "resumed").state.rng_states_size(), 2);  // both ranks' dropout
  expect_success(mpirun(2, train_args("tiny_causal_lm", tmp / "resumed", dropout, {"--resume"})),
                 tmp / "resume.log");
  const io::Checkpoint a = latest_checkpoint(tmp / "straight"),
                       b = latest_checkpoint(tmp / "resumed");
  EXPECT_EQ(b.state.step(), 6);
  EXPECT_TRUE(compare_weights(a, b).bitwise_equal);
  EXPECT_TRUE(optimizer_states_equal(a, b));
}

TEST(MpirunTrain, ACheckpointOfTwoRanksContinuesWithOneAndViceVersa) {
  TempDir tmp;
  const std::vector<std::string> sgd =
      with(kShortRun, {"optimizer.sgd.momentum=0.5", "schedule.lr=0.3"});
  expect_success(train_args("tiny_causal_lm", tmp / "straight", sgd), tmp / "straight.log");
  // 2 ranks for 3 steps, then 1 process.
  expect_success(
      mpirun(2, train_args("tiny_causal_lm", tmp / "two_one", sgd, {"--stop-after", "3"})),
      tmp / "a.log");
  expect_success(train_args("tiny_causal_lm", tmp / "two_one", sgd, {"--resume"}), tmp / "b.log");
  // 1 process for 3 steps, then 2 ranks.
  expect_success(train_args("tiny_causal_lm", tmp / "one_two", sgd, {"--stop-after", "3"}),
                 tmp / "c.log");
  expect_success(mpirun(2, train_args("tiny_causal_lm", tmp / "one_two", sgd, {"--resume"})),
                 tmp / "d.log");
  const io::Checkpoint straight = latest_checkpoint(tmp / "straight");
  for (const char* run : {"two_one", "one_two"}) {
    const io::Checkpoint resumed = latest_checkpoint(tmp / run);
    EXPECT_EQ(resumed.state.step(), 6) << run;
    // The same examples in every step: cursor and token count agree exactly.
    EXPECT_EQ(resumed.state.data_cursor().position(), straight.state.data_cursor().position());
    EXPECT_EQ(resumed.state.tokens_seen(), straight.state.tokens_seen()) << run;
    const WeightDifference diff = compare_weights(resumed, straight);
    EXPECT_LT(diff.max_abs, 1e-5 * std::max(1.0, diff.max_magnitude)) << run << " " << diff.max_abs;
  }
}

// train.carry_state over ranks: each rank carries its own lanes (2 of the 4), the checkpoint
// gathers all four, and a run continues with another number of ranks, each taking its lanes'
// states back: 2 ranks then 1 process, and 1 then 2, equal one process throughout.
TEST(MpirunTrain, CarriedStatesMoveBetweenTwoRanksAndOneProcess) {
  TempDir tmp;
  const std::vector<std::string> stateful = with(kShortRun, {"train.carry_state=true"});
  expect_success(train_args("tiny_causal_lm", tmp / "straight", stateful), tmp / "straight.log");
  expect_success(
      mpirun(2, train_args("tiny_causal_lm", tmp / "two_one", stateful, {"--stop-after", "3"})),
      tmp / "a.log");
  expect_success(train_args("tiny_causal_lm", tmp / "two_one", stateful, {"--resume"}),
                 tmp / "b.log");
  expect_success(train_args("tiny_causal_lm", tmp / "one_two", stateful, {"--stop-after", "3"}),
                 tmp / "c.log");
  expect_success(mpirun(2, train_args("tiny_causal_lm", tmp / "one_two", stateful, {"--resume"})),
                 tmp / "d.log");
  const io::Checkpoint straight = latest_checkpoint(tmp / "straight");
  const auto states = [](const io::Checkpoint& c) {
    return io::parse_safetensors(c.extra_files.at("carried_state.safetensors"), "carried");
  };
  for (const char* run : {"two_one", "one_two"}) {
    const io::Checkpoint resumed = latest_checkpoint(tmp / run);
    EXPECT_EQ(resumed.state.step(), 6) << run;
    const WeightDifference diff = compare_weights(resumed, straight);
    EXPECT_LT(diff.max_abs, 1e-5 * std::max(1.0, diff.max_magnitude)) << run << " " << diff.max_abs;
    // The carried states of all four lanes, gathered from the ranks, agree to rounding.
    const io::SafetensorsContent a = states(resumed), b = states(straight);
    EXPECT_EQ(a.metadata.at("position"), "192") << run;  // 6 windows of 32
    ASSERT_EQ(a.tensors.size(), b.tensors.size());
    for (const auto& [name, tensor] : b.tensors) {
      const std::vector<double> x = a.tensors.at(name).to_double_vector(),
                                y = tensor.to_double_vector();
      ASSERT_EQ(x.size(), y.size());
      for (size_t i = 0; i < x.size(); ++i) {
        EXPECT_NEAR(x[i], y[i], 1e-4 * std::max(1.0, std::abs(y[i]))) << run << " " << name;
      }
    }
  }
}

// Starts a long 2-rank run and waits until it has logged a step (and written a checkpoint).
struct LongRun {
  TempDir tmp;
  fs::path run = tmp / "run";
  std::unique_ptr<ChildProcess> child;

  LongRun() {
    child = std::make_unique<ChildProcess>(
        mpirun(2, train_args("tiny_causal_lm", run,
                             {"train.steps=100000", "train.eval_every=0", "train.log_every=1",
                              "train.checkpoint_every=2"})),
        kEnv, tmp / "out.log");
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (
        std::chrono::steady_clock::now() < deadline &&
        !(testing::metrics_lines(run, "train").size() >= 3 && io::find_latest(run).has_value())) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }

  // Sends `signal` to rank 1 and waits for the job to end into *result: a fatal failure when
  // the run never started, rank 1 has no process or the job outlives kTimeoutS.
  void signal_rank1_and_wait(int signal, ChildResult* result) {
    ASSERT_TRUE(io::find_latest(run).has_value()) << "the run did not start";
    const pid_t rank1 = child->rank_pid(1);
    ASSERT_GT(rank1, 0);
    ::kill(rank1, signal);
    *result = child->wait(kTimeoutS);
    ASSERT_FALSE(result->timed_out) << result->output;
  }
};

TEST(MpirunTrain, SigtermToOneRankStopsEveryRankAtTheSameStepWithACheckpoint) {
  LongRun job;
  ChildResult result;
  ASSERT_NO_FATAL_FAILURE(job.signal_rank1_and_wait(SIGTERM, &result));
  EXPECT_EQ(result.exit_code, 1) << result.output;  // interrupted by a signal
  EXPECT_EQ(result.output.find("MPI_ABORT"), std::string::npos) << result.output;
  const io::Checkpoint last = latest_checkpoint(job.run);
  EXPECT_GT(last.state.step(), 0);
  EXPECT_LT(last.state.step(), 100000);
  EXPECT_EQ(count_lines_with(job.run / "train.log", "SIGTERM received: stopped at step " +
                                                        std::to_string(last.state.step())),
            1)
      << result.output;
  // The resume line repeats the command as invoked (the program's path, then its arguments).
  EXPECT_NE(
      result.output.find("continue with: mpirun -np 2 " + std::string(ROTA_BINARY) + " train"),
      std::string::npos)
      << result.output;
}

TEST(MpirunTrain, AKilledRankEndsTheJobAndTheLastCheckpointStaysReadable) {
  LongRun job;
  ChildResult result;
  ASSERT_NO_FATAL_FAILURE(job.signal_rank1_and_wait(SIGKILL, &result));
  EXPECT_NE(result.exit_code, 0);
  EXPECT_NE(result.output.find("rank 1"), std::string::npos) << result.output;
  EXPECT_NO_THROW(latest_checkpoint(job.run));
}

TEST(MpirunTrain, AnExceptionOnOneRankAbortsTheJobWithItsMessage) {
  TempDir tmp;
  const ChildResult result = run(mpirun(2, {ROTA_ABORT_PROBE}), tmp / "probe.log");
  EXPECT_EQ(result.exit_code, 3) << result.output;
  EXPECT_NE(result.output.find("error (rank 1 of 2): probe failure on purpose"), std::string::npos)
      << result.output;
  EXPECT_EQ(result.output.find("passed the barrier"), std::string::npos) << result.output;
}

size_t count_of(const std::string& text, const std::string& part) {
  size_t count = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++count;
  return count;
}

TEST(MpirunTrain, RecipeErrorsOfEveryRankAreReportedOnceWithoutAnAbort) {
  TempDir tmp;
  // A global batch of 4 cannot be shared by 3 ranks.
  ChildResult result =
      run(mpirun(3, train_args("tiny_causal_lm", tmp / "run", {"train.steps=1"})), tmp / "a.log");
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_EQ(count_of(result.output, "data.batch_size: 4"), 1u) << result.output;
  EXPECT_EQ(result.output.find("MPI_ABORT"), std::string::npos) << result.output;
  EXPECT_FALSE(fs::exists(tmp / "run" / "checkpoints"));
  // An invalid --set, seen by both ranks.
  result = run(mpirun(2, train_args("tiny_causal_lm", tmp / "run", {"train.keep_checkpoints=0"})),
               tmp / "b.log");
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_EQ(count_of(result.output, "train.keep_checkpoints: must be"), 1u) << result.output;
  EXPECT_EQ(result.output.find("MPI_ABORT"), std::string::npos) << result.output;
}

// Only rank 0 writes into the run directory, so only rank 0 locks it (RUN/.lock); when another
// process holds it, every rank stops with exit code 1 and the message appears once, no abort.
TEST(MpirunTrain, ABusyRunDirectoryIsRefusedOnceOnEveryRankAndAFreeOneIsLockedByRankZero) {
  TempDir tmp;
  const fs::path dir = tmp / "run";
  {
    const DirectoryLock held(dir);
    const ChildResult result =
        run(mpirun(2, train_args("tiny_causal_lm", dir, kShortRun)), tmp / "busy.log");
    EXPECT_EQ(result.exit_code, 1) << result.output;
    EXPECT_EQ(count_of(result.output, dir.string() + " is in use by "), 1u) << result.output;
    EXPECT_NE(result.output.find("(pid " + std::to_string(::getpid()) + " on "), std::string::npos)
        << result.output;
    EXPECT_EQ(result.output.find("MPI_ABORT"), std::string::npos) << result.output;
    EXPECT_FALSE(fs::exists(dir / "train.log"));
  }
  expect_success(mpirun(2, train_args("tiny_causal_lm", dir, kShortRun)), tmp / "free.log");
  EXPECT_TRUE(fs::exists(dir / ".lock"));
  EXPECT_TRUE(io::find_latest(dir).has_value());
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
