// ScratchDirectory removes itself on every exit; stale ones of dead processes go at the next start.
#include "framework/base/scratch_directory.h"

#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

#include "tests/support/program.h"
#include "tests/support/temp_dir.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

namespace fs = std::filesystem;

void touch(const fs::path& path) {
  std::ofstream(path) << "x";
}

TEST(ScratchDirectory, IsFreshAndRemovedOnScopeExitAndOnException) {
  const testing::TempDir tmp;
  fs::path seen;
  {
    const ScratchDirectory dir("rota-test", tmp.path());
    seen = dir.path();
    EXPECT_TRUE(fs::is_directory(seen));
    EXPECT_TRUE(fs::is_empty(seen));
    EXPECT_EQ(scratch_directory_pid(seen.filename().string(), "rota-test"), ::getpid());
    touch(seen / "tokenizer.json");
  }
  EXPECT_FALSE(fs::exists(seen));
  try {
    const ScratchDirectory dir("rota-test", tmp.path());
    seen = dir.path();
    touch(seen / "file");
    throw std::runtime_error("failed mid-use");
  } catch (const std::runtime_error&) {
  }
  EXPECT_FALSE(fs::exists(seen));
}

TEST(ScratchDirectory, NamesArePrefixPidCounter) {
  EXPECT_EQ(scratch_directory_pid("rota-tokenizer-1234-0", "rota-tokenizer"), 1234);
  EXPECT_EQ(scratch_directory_pid("rota-tokenizer-1234-17", "rota-tokenizer"), 1234);
  EXPECT_EQ(scratch_directory_pid("rota-tokenizer-1234", "rota-tokenizer"), 0);
  EXPECT_EQ(scratch_directory_pid("rota-tokenizer-1234-", "rota-tokenizer"), 0);
  EXPECT_EQ(scratch_directory_pid("rota-tokenizer--1-0", "rota-tokenizer"), 0);
  EXPECT_EQ(scratch_directory_pid("rota-tokenizer-0-0", "rota-tokenizer"), 0);
  EXPECT_EQ(scratch_directory_pid("rota-tokenizer-12a-0", "rota-tokenizer"), 0);
  EXPECT_EQ(scratch_directory_pid("rota-tokenizer-1-2-3", "rota-tokenizer"), 0);
  EXPECT_EQ(scratch_directory_pid("rota-tokenizer-99999999999-0", "rota-tokenizer"), 0);
  EXPECT_EQ(scratch_directory_pid("rota-tokenizerx-12-0", "rota-tokenizer"), 0);
  EXPECT_EQ(scratch_directory_pid("rota-digest-12-0", "rota-tokenizer"), 0);
}

TEST(ScratchDirectory, OnlyDirectoriesOfDeadProcessesWithOurPatternAreRemoved) {
  const testing::TempDir tmp;
  const testing::TempDir outside;
  const std::string dead = std::to_string(testing::dead_pid());
  const std::string alive = std::to_string(::getppid());
  const fs::path stale = tmp / ("rota-tokenizer-" + dead + "-0");
  fs::create_directories(stale / "nested");
  touch(stale / "nested" / "tokenizer.model");
  const fs::path live = tmp / ("rota-tokenizer-" + alive + "-3");
  const fs::path ours = tmp / ("rota-tokenizer-" + std::to_string(::getpid()) + "-5");
  const fs::path other_prefix = tmp / ("rota-other-" + dead + "-0");
  const fs::path bad_name = tmp / ("rota-tokenizer-" + dead + "-x");
  for (const fs::path& dir : {live, ours, other_prefix, bad_name}) fs::create_directories(dir);
  const fs::path file = tmp / ("rota-tokenizer-" + dead + "-1");
  touch(file);
  touch(outside / "keep");
  const fs::path link = tmp / ("rota-tokenizer-" + dead + "-2");
  fs::create_directory_symlink(outside.path(), link);

  EXPECT_EQ(remove_stale_scratch_directories("rota-tokenizer", tmp.path()), 1);
  EXPECT_FALSE(fs::exists(stale));
  for (const fs::path& kept : {live, ours, other_prefix, bad_name, file}) {
    EXPECT_TRUE(fs::exists(kept)) << kept;
  }
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_TRUE(fs::exists(outside / "keep"));  // never followed through the link
  EXPECT_EQ(remove_stale_scratch_directories("rota-tokenizer", tmp.path()), 0);
  EXPECT_EQ(remove_stale_scratch_directories("rota-tokenizer", tmp / "missing"), 0);
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
