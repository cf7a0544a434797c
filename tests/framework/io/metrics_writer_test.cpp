// metrics.jsonl: every line parses as one JSON object with the values written; resume truncation.
#include "framework/io/metrics_writer.h"

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "framework/base/error.h"
#include "tests/framework/io/io_test_util.h"

namespace rota::io {
namespace ROTA_TEST_FILE_NS {

using testing::read_bytes;
using testing::TempDir;

std::vector<nlohmann::json> parse_lines(const std::string& text) {
  std::vector<nlohmann::json> out;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) out.push_back(nlohmann::json::parse(line));
  return out;
}

TEST(MetricsWriter, EachRecordIsOneJsonLineVisibleImmediately) {
  TempDir dir;
  const auto path = dir / "run" / "metrics.jsonl";
  MetricsWriter writer(path);
  writer.write(
      {{"step", 10}, {"split", "train"}, {"loss", 3.25}, {"lr", 6e-4}, {"tok_per_s", 41200.5}});
  // Visible before the writer is closed (flushed per write).
  auto lines = parse_lines(read_bytes(path));
  ASSERT_EQ(lines.size(), 1u);
  writer.write(
      {{"step", int64_t{20}}, {"split", "valid"}, {"loss", std::nan("")}, {"ppl", 1.0f / 0.0f}});
  lines = parse_lines(read_bytes(path));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0]["step"], 10);
  EXPECT_TRUE(lines[0]["step"].is_number_integer());
  EXPECT_EQ(lines[0]["split"], "train");
  EXPECT_EQ(lines[0]["loss"], 3.25);
  EXPECT_EQ(lines[0]["lr"].get<double>(), 6e-4);
  EXPECT_TRUE(lines[1]["loss"].is_null());  // JSON has no NaN
  EXPECT_TRUE(lines[1]["ppl"].is_null());
  // Keys keep the written order.
  EXPECT_EQ(metric_record_json({{"b", 1}, {"a", 2}}), "{\"b\":1,\"a\":2}");
  EXPECT_THROW(writer.write({{"a", 1}, {"a", 2}}), Error);
}

TEST(MetricsWriter, AppendsAcrossWriters) {
  TempDir dir;
  const auto path = dir / "metrics.jsonl";
  { MetricsWriter(path).write({{"step", 1}}); }
  { MetricsWriter(path).write({{"step", 2}}); }
  const auto lines = parse_lines(read_bytes(path));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[1]["step"], 2);
}

TEST(MetricsWriter, ResumeDropsLinesAfterTheCheckpointStep) {
  TempDir dir;
  const auto path = dir / "metrics.jsonl";
  {
    MetricsWriter writer(path);
    for (int step = 10; step <= 60; step += 10)
      writer.write({{"step", step}, {"loss", 1.0 / step}});
    writer.write({{"event", "no step"}});
  }
  {  // a torn last line from a crash
    std::FILE* f = std::fopen(path.c_str(), "a");
    std::fputs("{\"step\": 70, \"lo", f);
    std::fclose(f);
  }
  truncate_metrics_after_step(path, 40);
  const auto lines = parse_lines(read_bytes(path));
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_EQ(lines[3]["step"], 40);
  EXPECT_EQ(lines[4]["event"], "no step");
  truncate_metrics_after_step(dir / "absent.jsonl", 5);
  EXPECT_FALSE(std::filesystem::exists(dir / "absent.jsonl"));
}

// A full disk (here a 2000-byte file-size limit, in a child process) during an append: write()
// throws naming the file, and the file still ends with a whole line that parses.
TEST(MetricsWriter, AFailedAppendLeavesNoTornLine) {
  TempDir dir;
  const auto path = dir / "metrics.jsonl";
  const auto message_path = dir / "message";
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::signal(SIGXFSZ, SIG_IGN);
    rlimit limit{2000, 2000};
    if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) ::_exit(3);
    MetricsWriter writer(path);
    try {
      for (int step = 1; step <= 1000; ++step) {
        writer.write({{"step", step}, {"split", "train"}, {"loss", 1.0 / step}});
      }
    } catch (const Error& e) {
      std::FILE* f = std::fopen(message_path.c_str(), "w");
      if (f == nullptr) ::_exit(4);
      std::fputs(e.what(), f);
      std::fclose(f);
      ::_exit(0);
    }
    ::_exit(2);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0) << "2: no error; 3: setrlimit; 4: message file";
  const std::string text = read_bytes(path);
  ASSERT_FALSE(text.empty());
  EXPECT_LE(text.size(), 2000u);
  EXPECT_EQ(text.back(), '\n');
  const auto lines = parse_lines(text);  // throws on a torn line
  EXPECT_GT(lines.size(), 10u);
  EXPECT_EQ(lines.back()["step"], static_cast<int>(lines.size()));
  const std::string message = read_bytes(message_path);
  EXPECT_NE(message.find(path.string()), std::string::npos) << message;
  EXPECT_NE(message.find("File too large"), std::string::npos) << message;
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::io
