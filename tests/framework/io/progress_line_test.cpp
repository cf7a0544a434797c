// Progress line (EMA loss, tok/s, ETA, throttled redraws, plain lines) and the leveled logger.
#include "framework/io/progress_line.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "framework/base/error.h"
#include "framework/io/log.h"
#include "tests/framework/io/io_test_util.h"
#include "tests/support/expect_error.h"

namespace rota::io {
namespace ROTA_TEST_FILE_NS {

using testing::read_bytes;
using testing::TempDir;

// Captures what is written to a FILE*.
class Capture {
 public:
  Capture() : file_(std::tmpfile()) {}
  ~Capture() { std::fclose(file_); }
  std::FILE* file() const { return file_; }
  std::string text() const {
    std::fflush(file_);
    std::rewind(file_);
    std::string out;
    char buffer[4096];
    size_t got;
    while ((got = std::fread(buffer, 1, sizeof(buffer), file_)) > 0) out.append(buffer, got);
    std::fseek(file_, 0, SEEK_END);
    return out;
  }

 private:
  std::FILE* file_;
};

// Options for `total_steps` steps written to `out`, plain or redrawn (`terminal`), timed by a
// fake clock that reads `now`.
ProgressOptions fake_clock_options(int64_t total_steps, std::FILE* out, bool terminal,
                                   const double& now) {
  ProgressOptions options;
  options.total_steps = total_steps;
  options.out = out;
  options.terminal = terminal;
  options.clock = [&now] { return now; };
  return options;
}

size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

TEST(Formatting, DurationsCountsAndSmallNumbers) {
  EXPECT_EQ(format_duration(42.4), "42s");
  EXPECT_EQ(format_duration(185), "3m05s");
  EXPECT_EQ(format_duration(3600 + 12 * 60 + 30), "1h12m");
  EXPECT_EQ(format_duration(2 * 86400 + 3 * 3600), "2d03h");
  EXPECT_EQ(format_duration(std::nan("")), "?");
  EXPECT_EQ(format_count(950), "950");
  EXPECT_EQ(format_count(41200), "41.2k");
  EXPECT_EQ(format_count(1.5e6), "1.50M");
  EXPECT_EQ(format_small(5.8e-4), "5.8e-4");
  EXPECT_EQ(format_small(3e-10), "3.0e-10");
  EXPECT_EQ(format_small(1.25e2), "1.2e2");  // round-half-even of 1.25 at one decimal
  EXPECT_EQ(format_small(0), "0");
}

TEST(ProgressLine, SmoothedValuesMatchADoubleReference) {
  double now = 0;
  ProgressOptions options = fake_clock_options(100, nullptr, false, now);
  options.smoothing = 0.9;
  ProgressLine progress(options);
  EXPECT_TRUE(std::isnan(progress.smoothed_loss()));

  // Reference: bias-corrected EMAs computed directly as weighted averages.
  std::vector<double> losses, seconds, tokens;
  for (int step = 1; step <= 5; ++step) {
    const double dt = 0.5 + 0.1 * step;
    now += dt;
    losses.push_back(4.0 / step);
    seconds.push_back(dt);
    tokens.push_back(1000.0 * step);
    progress.update({step, losses.back(), 1e-3, 0.5, static_cast<int64_t>(tokens.back())});
    auto weighted = [&](const std::vector<double>& xs) {
      double num = 0, den = 0;
      for (size_t i = 0; i < xs.size(); ++i) {
        const double w = std::pow(0.9, static_cast<double>(xs.size() - 1 - i));
        num += w * xs[i];
        den += w;
      }
      return num / den;
    };
    EXPECT_NEAR(progress.smoothed_loss(), weighted(losses), 1e-12);
    EXPECT_NEAR(progress.tokens_per_second(), weighted(tokens) / weighted(seconds), 1e-9);
    EXPECT_NEAR(progress.eta_seconds(), (100 - step) * weighted(seconds), 1e-9);
  }
  EXPECT_EQ(progress.text().rfind("step 5/100 | loss(ema) ", 0), 0u) << progress.text();
  EXPECT_NE(progress.text().find("| lr 1.0e-3 | gnorm 0.5 |"), std::string::npos)
      << progress.text();
  EXPECT_NE(progress.text().find(" tok/s | eta "), std::string::npos);
}

TEST(ProgressLine, PlainLinesEveryNStepsWhenNotATerminal) {
  Capture out;
  std::vector<std::string> logged;
  double now = 0;
  ProgressOptions options = fake_clock_options(25, out.file(), false, now);
  options.log_every = 10;
  options.on_log_step = [&logged](const std::string& line) { logged.push_back(line); };
  {
    ProgressLine progress(options);
    for (int step = 1; step <= 25; ++step) {
      now += 0.01;
      progress.update({step, 2.0, 1e-3, 1.0, 512});
    }
  }
  const std::string text = out.text();
  EXPECT_EQ(count(text, "\n"), 3u) << text;  // steps 10, 20 and the last (25)
  EXPECT_EQ(count(text, "\r"), 0u);
  EXPECT_NE(text.find("step 10/25 |"), std::string::npos);
  EXPECT_NE(text.find("step 25/25 |"), std::string::npos);
  EXPECT_NE(text.find("51.2k tok/s"), std::string::npos) << text;  // 512 tokens / 0.01 s
  ASSERT_EQ(logged.size(), 3u);
  EXPECT_EQ(logged[0].rfind("step 10/25", 0), 0u);
}

TEST(ProgressLine, TerminalRedrawsAtMostTenTimesPerSecond) {
  Capture out;
  double now = 0;
  {
    ProgressLine progress(fake_clock_options(1000, out.file(), true, now));
    for (int step = 1; step <= 1000; ++step) {  // 1000 steps of 2 ms: 2 seconds
      now += 0.002;
      progress.update({step, 1.0, 1e-3, 1.0, 100});
    }
  }
  const std::string text = out.text();
  const size_t redraws = count(text, "\r");
  EXPECT_GE(redraws, 19u);
  EXPECT_LE(redraws, 22u) << "2 s at <= 10 Hz, plus the final step";
  EXPECT_EQ(count(text, "\x1b[K"), redraws);
  EXPECT_NE(text.find("step 1000/1000"), std::string::npos);  // the last step is always drawn
  EXPECT_EQ(text.back(), '\n');                               // finished by the destructor
}

TEST(ProgressLine, LogLinesAppearAboveTheLiveLine) {
  Capture out, console;
  set_log_console(console.file());
  double now = 0;
  {
    ProgressLine progress(fake_clock_options(10, out.file(), true, now));
    now += 1;
    progress.update({1, 1.0, 1e-3, 1.0, 100});
    log_info("evaluating");
  }
  set_log_console(stderr);
  const std::string text = out.text();
  // Drawn, cleared for the log line, drawn again, finished.
  EXPECT_EQ(count(text, "\rstep 1/10"), 2u) << text;
  EXPECT_NE(text.find("\x1b[K\r\x1b[K\rstep 1/10"), std::string::npos) << text;
  EXPECT_NE(console.text().find("INFO  evaluating"), std::string::npos);
}

TEST(Log, LevelsFromNamesAndTheEnvironment) {
  EXPECT_EQ(parse_log_level("DEBUG"), LogLevel::kDebug);
  EXPECT_EQ(parse_log_level("warning"), LogLevel::kWarn);
  EXPECT_EQ(parse_log_level("off"), LogLevel::kOff);
  EXPECT_THROW(parse_log_level("loud"), Error);
  const LogLevel saved = log_level();
  ::setenv("ROTA_LOG_LEVEL", "error", 1);
  init_logging_from_env();
  EXPECT_EQ(log_level(), LogLevel::kError);
  ::setenv("ROTA_LOG_LEVEL", "verbose", 1);
  rota::testing::expect_error([&] { init_logging_from_env(); }, "ROTA_LOG_LEVEL");
  ::unsetenv("ROTA_LOG_LEVEL");
  init_logging_from_env();  // unset: unchanged
  EXPECT_EQ(log_level(), LogLevel::kError);
  set_log_level(saved);
}

TEST(Log, FiltersByLevelAndWritesTheFile) {
  TempDir dir;
  Capture console;
  const LogLevel saved = log_level();
  set_log_console(console.file());
  set_log_file(dir / "train.log");
  set_log_level(LogLevel::kInfo);
  log_debug("hidden {}", 1);
  log_info("step {} loss {:.2f}", 5, 1.234);
  log_warn("careful");
  set_log_level(LogLevel::kOff);
  log_error("not even errors");
  set_log_file("");
  set_log_console(stderr);
  set_log_level(saved);

  const std::string file = read_bytes(dir / "train.log");
  EXPECT_EQ(file, console.text());
  EXPECT_EQ(count(file, "\n"), 2u) << file;
  EXPECT_NE(file.find(" INFO  step 5 loss 1.23\n"), std::string::npos) << file;
  EXPECT_NE(file.find(" WARN  careful\n"), std::string::npos) << file;
  EXPECT_EQ(file.find("hidden"), std::string::npos);
  const std::string line = format_log_line(LogLevel::kError, "boom", 0.5);
  EXPECT_EQ(line.size(), std::string("1970-01-01 00:00:00.500 ERROR boom").size()) << line;
  EXPECT_NE(line.find(".500 ERROR boom"), std::string::npos) << line;
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::io
