// Command-line mistakes get exit code 2 and a message naming what is wrong: an unknown or missing
// command (and the closest one), a number option given nan, inf or a negative value; a malformed
// checkpoints/latest is a runtime failure (exit 1) naming the file and what it holds.
#include <cctype>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "framework/base/file_io.h"
#include "tests/support/program.h"
#include "tests/support/source_tree.h"
#include "tests/support/temp_dir.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

namespace fs = std::filesystem;

const std::string kTiny = std::string(ROTA_SOURCE_DIR) + "/recipes/tests/tiny_causal_lm.txtpb";

testing::CommandResult rota(const std::string& arguments) {
  return testing::run_command("OMP_NUM_THREADS=1 " + testing::built_rota() + " " + arguments);
}

void expect_usage_error(const std::string& arguments, const std::vector<std::string>& needles) {
  const testing::CommandResult r = rota(arguments);
  EXPECT_EQ(r.code, 2) << "rota " << arguments << "\n" << r.output;
  for (const std::string& needle : needles) {
    EXPECT_NE(r.output.find(needle), std::string::npos)
        << "rota " << arguments << ": no '" << needle << "' in\n"
        << r.output;
  }
}

// No number in a message has tens of digits (CLI11's ranges printed DBL_MAX in full).
void expect_no_huge_numbers(const std::string& output) {
  size_t run = 0;
  for (const char c : output) {
    run = std::isdigit(static_cast<unsigned char>(c)) ? run + 1 : 0;
    ASSERT_LT(run, 25u) << output;
  }
}

TEST(CliMessages, AnUnknownCommandIsNamedWithTheClosestOne) {
  expect_usage_error("trian " + kTiny, {"rota: unknown command 'trian'", "did you mean 'train'?",
                                        "train, eval, predict, generate"});
  expect_usage_error("frobnicate", {"unknown command 'frobnicate'", "the commands are train"});
  expect_usage_error("data lst", {"rota data: unknown command 'lst'", "did you mean 'list'?"});
  expect_usage_error("bench trian x", {"rota bench: unknown command 'trian'", "'train'"});
  const testing::CommandResult far = rota("frobnicate");
  EXPECT_EQ(far.output.find("did you mean"), std::string::npos) << far.output;
}

TEST(CliMessages, AMissingCommandListsTheCommands) {
  expect_usage_error("", {"rota: a command is required: train, eval"});
  expect_usage_error("data", {"rota data: a command is required: list, fetch, prepare, verify"});
  // Options still reach the parser: --help and --version succeed.
  EXPECT_EQ(rota("--help").code, 0);
  EXPECT_EQ(rota("--version").code, 0);
  EXPECT_EQ(rota("data --help").code, 0);
}

TEST(CliMessages, NonFiniteAndNegativeNumberOptionsAreUsageErrorsNamingTheOption) {
  const std::string generate = "generate /nonexistent/run --prompt a ";
  for (const char* value : {"nan", "NaN", "inf", "-inf", "1e999"}) {
    expect_usage_error(generate + "--temperature " + value,
                       {"--temperature: must be a finite number >= 0, got " + std::string(value)});
  }
  expect_usage_error(generate + "--temperature -0.5", {"--temperature: must be >= 0, got -0.5"});
  const std::vector<std::pair<std::string, std::string>> cases = {
      {generate + "--tokens -1", "--tokens: must be >= 0, got -1"},
      {generate + "--top-k -3", "--top-k: must be >= 0, got -3"},
      {generate + "--seed -1", "--seed: must be >= 0, got -1"},
      {"eval /nonexistent/run --context -5", "--context: must be > 0, got -5"},
      {"eval /nonexistent/run --context 0", "--context: must be > 0, got 0"},
      {"eval /nonexistent/run --context nan", "--context: must be a finite number > 0, got nan"},
      {"eval /nonexistent/run --batches -1", "--batches: must be >= 0, got -1"},
      {"predict /nonexistent/run --input x --batch-size 0", "--batch-size: must be > 0, got 0"},
      {"train " + kTiny + " --stop-after -2", "--stop-after: must be > 0, got -2"},
      {"bench train " + kTiny + " --steps 0", "--steps: must be > 0, got 0"},
      {"bench train " + kTiny + " --warmup -1", "--warmup: must be >= 0, got -1"},
      {"data prepare --out x --shard-mb -1", "--shard-mb: must be > 0, got -1"},
      {"data prepare --out x --threads -1", "--threads: must be >= 0, got -1"},
      {"ablate x --jobs 0", "--jobs: must be > 0, got 0"},
      {"ablate x --eval-batches -1", "--eval-batches: must be >= 0, got -1"},
  };
  for (const auto& [arguments, message] : cases) {
    expect_usage_error(arguments, {message});
    expect_no_huge_numbers(rota(arguments).output);
  }
}

// A finished tiny run whose checkpoints/latest is then damaged in each way.
class MalformedLatest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    run_ = new testing::TempDir(testing::memory_temp_base());
    const testing::CommandResult r =
        rota("train " + kTiny + " --out " + dir().string() + " --stop-after 10");
    ASSERT_EQ(r.code, 0) << r.output;
  }
  static void TearDownTestSuite() {
    delete run_;
    run_ = nullptr;
  }
  static fs::path dir() { return *run_ / "run"; }
  static fs::path latest() { return dir() / "checkpoints" / "latest"; }

  // Puts `content` in latest; `rota eval` and `rota train --resume` fail with exit 1 naming
  // the file and the problem; then restores it.
  static void expect_refused(const std::string& content, const std::vector<std::string>& what) {
    const std::string saved = read_file(latest());
    {
      std::ofstream out(latest(), std::ios::binary | std::ios::trunc);
      out << content;
    }
    check(what);
    write_file_atomically(latest(), saved);
  }
  static void check(const std::vector<std::string>& what) {
    for (const std::string& command :
         {"eval " + dir().string(), "train " + kTiny + " --out " + dir().string() + " --resume"}) {
      const testing::CommandResult r = rota(command);
      EXPECT_EQ(r.code, 1) << command << "\n" << r.output;
      EXPECT_NE(r.output.find("checkpoint pointer " + latest().string()), std::string::npos)
          << command << "\n"
          << r.output;
      for (const std::string& needle : what) {
        EXPECT_NE(r.output.find(needle), std::string::npos)
            << command << ": no '" << needle << "' in\n"
            << r.output;
      }
    }
  }

  static testing::TempDir* run_;
};
testing::TempDir* MalformedLatest::run_ = nullptr;

TEST_F(MalformedLatest, Empty) {
  expect_refused("", {"expected the name of a step directory", "found ''"});
}
TEST_F(MalformedLatest, Garbage) {
  expect_refused(std::string("step\0\x01zz", 8), {"found 'step\\x00\\x01zz'"});
}
TEST_F(MalformedLatest, APathWithSlashes) {
  expect_refused("../../etc\n", {"found '../../etc'"});
  expect_refused("step_000010/../step_000010", {"found 'step_000010/../step_000010'"});
}
TEST_F(MalformedLatest, AnUnfinishedDirectory) {
  expect_refused("step_000010.tmp\n", {"found 'step_000010.tmp'"});
}
TEST_F(MalformedLatest, ANameThatDoesNotExist) {
  expect_refused("step_000999\n", {"names 'step_000999'", "does not exist"});
}
TEST_F(MalformedLatest, HugeOrADirectory) {
  expect_refused(std::string(100000, 'x'), {"100000 bytes"});
  const std::string saved = read_file(latest());
  fs::remove(latest());
  fs::create_directory(latest());
  check({"not a regular file"});
  fs::remove(latest());
  write_file_atomically(latest(), saved);
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
