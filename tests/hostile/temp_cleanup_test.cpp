// Scratch directories: a run leaves none behind, and those a killed run left ($TMPDIR/
// rota-tokenizer-PID-N, rota-digest-PID-N with a dead PID) are removed when the next run starts;
// live processes' directories, other names, files and symbolic links are never touched.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/hostile/child_process.h"
#include "tests/support/program.h"
#include "tests/support/source_tree.h"
#include "tests/support/temp_dir.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

namespace fs = std::filesystem;

const std::string kTiny = std::string(ROTA_SOURCE_DIR) + "/recipes/tests/tiny_causal_lm.txtpb";

std::vector<std::string> scratch_names(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("rota-", 0) == 0) {
      names.push_back(name);
    }
  }
  return names;
}

testing::CommandResult train_with_tmpdir(const fs::path& tmpdir, const fs::path& out,
                                         const std::string& extra = "") {
  return testing::run_command("TMPDIR=" + tmpdir.string() + " OMP_NUM_THREADS=1 " +
                              testing::built_rota() + " train " + kTiny + " --out " + out.string() +
                              " --stop-after 2 " + extra);
}

TEST(TempCleanup, StaleScratchDirectoriesOfDeadProcessesAreRemovedAtTheNextStart) {
  const testing::TempDir tmpdir;  // $TMPDIR of the runs
  const testing::TempDir elsewhere;
  const std::string dead = std::to_string(testing::dead_pid());
  const std::string alive = std::to_string(::getpid());
  const fs::path stale_tokenizer = tmpdir / ("rota-tokenizer-" + dead + "-0");
  const fs::path stale_digest = tmpdir / ("rota-digest-" + dead + "-3");
  fs::create_directories(stale_tokenizer);
  std::ofstream(stale_tokenizer / "tokenizer.json") << "{}";
  fs::create_directories(stale_digest);
  const std::vector<fs::path> kept = {
      tmpdir / ("rota-tokenizer-" + alive + "-0"),  // a live process's (this test's)
      tmpdir / ("rota-tokenizerx-" + dead + "-0"),  // not our name
      tmpdir / ("rota-tokenizer-" + dead + "-0x"),  // not our name
      tmpdir / ("rota-other-" + dead + "-0"),       // not our prefix
  };
  for (const fs::path& dir : kept) fs::create_directories(dir);
  const fs::path file = tmpdir / ("rota-tokenizer-" + dead + "-1");  // a file, not a directory
  std::ofstream(file) << "x";
  std::ofstream(elsewhere / "keep") << "x";
  const fs::path link = tmpdir / ("rota-tokenizer-" + dead + "-2");  // a link: never followed
  fs::create_directory_symlink(elsewhere.path(), link);

  const testing::CommandResult r = train_with_tmpdir(tmpdir.path(), tmpdir / "run");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_FALSE(fs::exists(stale_tokenizer));
  EXPECT_FALSE(fs::exists(stale_digest));
  for (const fs::path& dir : kept) EXPECT_TRUE(fs::is_directory(dir)) << dir;
  EXPECT_TRUE(fs::is_regular_file(file));
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_TRUE(fs::exists(elsewhere / "keep"));
  // The run's own scratch directories (a checkpoint saves the tokenizer through one) are gone.
  std::vector<std::string> left = scratch_names(tmpdir.path());
  std::sort(left.begin(), left.end());
  std::vector<std::string> expected;
  for (const fs::path& p : {kept[0], kept[1], kept[2], kept[3], file, link}) {
    expected.push_back(p.filename().string());
  }
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(left, expected);
}

TEST(TempCleanup, AStoppedRunAndAFailedRunLeaveNoScratchDirectory) {
  const testing::TempDir tmpdir;
  // SIGTERM: a checkpoint (the tokenizer through a scratch directory), then exit 1.
  {
    const std::string run = (tmpdir / "run").string();
    ::setenv("TMPDIR", tmpdir.path().c_str(), 1);
    testing::BackgroundRota stopped({"train", kTiny, "--out", run, "--set", "train.steps=1000000"},
                                    tmpdir / "out");
    ::unsetenv("TMPDIR");
    ASSERT_TRUE(testing::wait_until(
        [&] { return fs::exists(tmpdir / "run" / "checkpoints" / "latest") || !stopped.running(); },
        60));
    ASSERT_TRUE(stopped.running()) << stopped.output();
    stopped.signal(SIGTERM);
    EXPECT_EQ(stopped.wait(), 1) << stopped.output();
  }
  // A run that fails (no such data file) after the tokenizer is set up.
  const testing::CommandResult failed = train_with_tmpdir(
      tmpdir.path(), tmpdir / "failed", "--set 'data.files={train: \"/nonexistent/x.txt\"}'");
  EXPECT_NE(failed.code, 0) << failed.output;
  EXPECT_EQ(scratch_names(tmpdir.path()), std::vector<std::string>{});
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
