// Concurrent use of one run directory: rota train locks RUN/.lock for the whole run; a second
// writer (fresh, --resume, another seed into the same --out, rota ablate) fails fast with exit
// code 1 naming the directory and the holder's pid, and the holder's directory stays its own.
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "framework/base/directory_lock.h"
#include "framework/base/file_io.h"
#include "tests/hostile/child_process.h"
#include "tests/support/program.h"
#include "tests/support/source_tree.h"
#include "tests/support/temp_dir.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

namespace fs = std::filesystem;
using testing::BackgroundRota;
using testing::CommandResult;

const std::string kTiny = std::string(ROTA_SOURCE_DIR) + "/recipes/tests/tiny_causal_lm.txtpb";

CommandResult rota(const std::string& arguments) {
  return testing::run_command("OMP_NUM_THREADS=1 " + testing::built_rota() + " " + arguments);
}

// The pid the lock file of `dir` names (0: none yet).
long lock_holder_pid(const fs::path& dir) {
  std::error_code error;
  if (!fs::exists(dir / ".lock", error)) return 0;
  return parse_lock_holder(read_file(dir / ".lock")).pid;
}

// The second writers the issue names: fresh, --resume, and another seed into the same --out.
const std::vector<std::string> kSecondWriters = {"", "--resume", "--set train.seed=2"};

void expect_refused_naming(const CommandResult& r, const fs::path& dir, long pid) {
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find(dir.string() + " is in use by "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("(pid " + std::to_string(pid) + " on "), std::string::npos) << r.output;
}

TEST(RunLock, TwoTrainsOnOneDirectoryTheSecondFailsFastNamingTheFirst) {
  const testing::TempDir tmp(testing::memory_temp_base());
  const fs::path dir = tmp / "run";
  // The first run trains until it is stopped (SIGTERM: a checkpoint, then exit 1).
  BackgroundRota first({"train", kTiny, "--out", dir.string(), "--set", "train.steps=1000000",
                        "--set", "train.checkpoint_every=50"},
                       tmp / "first.out");
  testing::wait_until([&] { return lock_holder_pid(dir) == first.pid() || !first.running(); }, 60);
  ASSERT_EQ(lock_holder_pid(dir), first.pid()) << "the first run holds no lock: " << first.output();
  for (const std::string& second : kSecondWriters) {
    const auto start = std::chrono::steady_clock::now();
    const CommandResult r = rota("train " + kTiny + " --out " + dir.string() + " " + second);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    SCOPED_TRACE("second writer: rota train " + second);
    expect_refused_naming(r, dir, first.pid());
    EXPECT_LT(seconds, 10.0) << "refused only after " << seconds << " s";
  }
  ASSERT_TRUE(first.running()) << "the first run ended before the checks: " << first.output();
  // Let it log a few steps more, then stop it.
  ASSERT_TRUE(testing::wait_until(
      [&] { return fs::exists(dir / "checkpoints" / "latest") || !first.running(); }, 60));
  ASSERT_TRUE(first.running()) << first.output();
  first.signal(SIGTERM);
  EXPECT_EQ(first.wait(), 1) << first.output();
  EXPECT_NE(first.output().find("stopped at step"), std::string::npos) << first.output();

  // One writer's directory: one start in train.log, each train step logged once and in order,
  // the recipe of the first run (seed 1), and a latest checkpoint that loads.
  const std::string log = read_file(dir / "train.log");
  size_t starts = 0;
  for (size_t at = log.find("rota train "); at != std::string::npos;
       at = log.find("rota train ", at + 1)) {
    ++starts;
  }
  EXPECT_EQ(starts, 1u) << log;
  std::istringstream lines(read_file(dir / "metrics.jsonl"));
  std::string line;
  int64_t previous = 0;
  std::set<int64_t> steps;
  while (std::getline(lines, line)) {
    const auto record = nlohmann::json::parse(line);  // throws on a torn or mixed line
    if (record.at("split") != "train") continue;
    const int64_t step = record.at("step").get<int64_t>();
    EXPECT_GT(step, previous) << line;
    previous = step;
    EXPECT_TRUE(steps.insert(step).second) << "step " << step << " logged twice";
  }
  EXPECT_GE(steps.size(), 2u);
  EXPECT_NE(read_file(dir / "recipe.txtpb").find("seed: 1"), std::string::npos);
  const CommandResult eval = rota("eval " + dir.string() + " --split valid --batches 1");
  EXPECT_EQ(eval.code, 0) << eval.output;
  // The lock is free again, and its file names no one.
  EXPECT_EQ(lock_holder_pid(dir), 0);
  const CommandResult resumed = rota("train " + kTiny + " --out " + dir.string() +
                                     " --resume --set train.steps=1000000 "
                                     "--set train.checkpoint_every=50 --stop-after " +
                                     std::to_string(previous + 1));
  EXPECT_EQ(resumed.code, 0) << resumed.output;
}

// Deterministic: this test process holds the lock, as a running rota would. Every second writer
// is refused, and nothing but the lock file is written into the directory.
TEST(RunLock, NothingIsWrittenIntoALockedDirectory) {
  const testing::TempDir tmp(testing::memory_temp_base());
  const fs::path dir = tmp / "run";
  const DirectoryLock held(dir);
  for (const std::string& second : kSecondWriters) {
    SCOPED_TRACE("rota train " + second);
    expect_refused_naming(rota("train " + kTiny + " --out " + dir.string() + " " + second), dir,
                          ::getpid());
  }
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) {
    names.push_back(entry.path().filename().string());
  }
  EXPECT_EQ(names, std::vector<std::string>{".lock"});
}

TEST(RunLock, ALockFileLeftByAKilledRunDoesNotBlock) {
  const testing::TempDir tmp(testing::memory_temp_base());
  const fs::path dir = tmp / "run";
  {
    BackgroundRota killed({"train", kTiny, "--out", dir.string(), "--set", "train.steps=1000000"},
                          tmp / "killed.out");
    testing::wait_until([&] { return lock_holder_pid(dir) == killed.pid() || !killed.running(); },
                        60);
    ASSERT_EQ(lock_holder_pid(dir), killed.pid()) << killed.output();
    killed.signal(SIGKILL);
    EXPECT_EQ(killed.wait(), -1);
    EXPECT_EQ(lock_holder_pid(dir), killed.pid());  // its record stays; the flock went with it
  }
  const CommandResult r =
      rota("train " + kTiny + " --out " + dir.string() + " --resume --stop-after 2");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(lock_holder_pid(dir), 0);
}

// A run killed before its first checkpoint leaves metrics lines; the next run of the directory
// starts from step 0 and must not log its steps after them a second time.
TEST(RunLock, ARestartWithoutACheckpointDropsTheKilledRunsMetrics) {
  const testing::TempDir tmp(testing::memory_temp_base());
  const fs::path dir = tmp / "run";
  fs::create_directories(dir);
  {
    std::ofstream stale(dir / "metrics.jsonl");
    for (int step = 1; step <= 5; ++step) {
      stale << "{\"step\":" << step << ",\"split\":\"train\",\"loss\":9.0}\n";
    }
  }
  const CommandResult r = rota("train " + kTiny + " --out " + dir.string() +
                               " --resume --set train.log_every=1 --stop-after 3");
  ASSERT_EQ(r.code, 0) << r.output;
  std::istringstream lines(read_file(dir / "metrics.jsonl"));
  std::string line;
  std::vector<int64_t> steps;
  while (std::getline(lines, line)) {
    const auto record = nlohmann::json::parse(line);
    if (record.at("split") == "train") steps.push_back(record.at("step").get<int64_t>());
    EXPECT_NE(record.at("loss"), 9.0) << "a killed run's line survived: " << line;
  }
  EXPECT_EQ(steps, (std::vector<int64_t>{1, 2, 3}));
}

TEST(RunLock, AblationDirectoryIsLockedAndItsRunsLockTheirs) {
  const testing::TempDir tmp(testing::memory_temp_base());
  const fs::path out = tmp / "ablation";
  const std::string ablation = std::string(ROTA_SOURCE_DIR) + "/recipes/tests/tiny_ablation.txtpb";
  {
    const DirectoryLock held(out);
    const CommandResult r = rota("ablate " + ablation + " --out " + out.string());
    EXPECT_EQ(r.code, 1) << r.output;
    EXPECT_NE(r.output.find(out.string() + " is in use by "), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("(pid " + std::to_string(::getpid()) + " on "), std::string::npos)
        << r.output;
  }
  // Each child rota train locks its own run: one held here fails that run (named in the
  // report), the other runs train.
  const fs::path held_run = out / "runs" / "nope" / "seed1";
  const DirectoryLock held(held_run);
  const CommandResult r =
      rota("ablate " + ablation + " --out " + out.string() + " --eval-batches 1");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find(held_run.string() + " is in use by "), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(held_run / "checkpoints"));
  EXPECT_TRUE(fs::exists(out / "runs" / "lrpe" / "seed1" / "checkpoints" / "latest"));
  EXPECT_TRUE(fs::exists(out / "runs" / "nope" / "seed2" / "checkpoints" / "latest"));
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
