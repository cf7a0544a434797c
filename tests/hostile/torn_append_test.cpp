// A full disk during an append: rota train fails naming metrics.jsonl, and every append-only file
// it wrote (metrics.jsonl, train.log) still ends with a whole line. The disk is "full" through a
// file-size limit (RLIMIT_FSIZE, as ulimit -f): writes past it fail with EFBIG, as they would with
// ENOSPC (rota ignores SIGXFSZ, which would otherwise kill it mid-write).
#include <filesystem>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "framework/base/file_io.h"
#include "tests/hostile/child_process.h"
#include "tests/support/program.h"
#include "tests/support/source_tree.h"
#include "tests/support/temp_dir.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

namespace fs = std::filesystem;

const std::string kTiny = std::string(ROTA_SOURCE_DIR) + "/recipes/tests/tiny_causal_lm.txtpb";

// Every line of `text` is whole: the text ends with a newline and each line passes `check`.
template <typename Check>
void expect_whole_lines(const std::string& text, const fs::path& file, Check check) {
  ASSERT_FALSE(text.empty()) << file;
  EXPECT_EQ(text.back(), '\n') << file << " ends with a torn line: ..."
                               << text.substr(text.size() > 80 ? text.size() - 80 : 0);
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) check(line);
}

TEST(TornAppend, AFullDiskDuringAMetricsAppendLeavesWholeLinesAndAClearError) {
  const testing::TempDir tmp(testing::memory_temp_base());
  const fs::path dir = tmp / "run";
  // 8 KiB per file: the tokenizer and recipe fit; metrics.jsonl (~150 bytes a step, one line
  // per step) outgrows it around step 55, before train.log does and before the only checkpoint.
  testing::BackgroundRota run({"train", kTiny, "--out", dir.string(), "--set", "train.steps=200",
                               "--set", "train.log_every=1", "--set", "train.eval_every=1000",
                               "--set", "train.checkpoint_every=1000"},
                              tmp / "output", 8192);
  struct {
    int code;
    std::string output;
  } r{run.wait(), run.output()};
  EXPECT_EQ(r.code, 1) << r.output;
  const fs::path metrics = dir / "metrics.jsonl";
  EXPECT_NE(r.output.find("error: append to " + metrics.string() + ": File too large"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("the file still ends with its last whole record"), std::string::npos)
      << r.output;
  const std::string text = read_file(metrics);
  EXPECT_LE(text.size(), 8192u);
  EXPECT_GT(text.size(), 8192u - 200u);  // it was filled up to the limit, then rolled back
  int64_t step = 0;
  expect_whole_lines(text, metrics, [&](const std::string& line) {
    const auto record = nlohmann::json::parse(line);  // throws on a torn line
    EXPECT_EQ(record.at("step").get<int64_t>(), ++step) << line;
  });
  const fs::path log = dir / "train.log";
  expect_whole_lines(read_file(log), log, [](const std::string& line) {
    EXPECT_EQ(line.substr(0, 2), "20") << "not a timestamped log line: " << line;
  });
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
