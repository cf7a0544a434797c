// Test helpers for end-to-end runs: `rota train` with its output captured, the latest checkpoint.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "app/run/train_run.h"
#include "framework/io/checkpoint_paths.h"

namespace rota::app::testing {

/// run_training on a recipe file with overrides, stdout captured and dropped (also when it
/// throws, so that a test can go on to the next call).
inline int train_quietly(const std::string& recipe, const std::filesystem::path& out,
                         std::vector<std::string> overrides, bool resume = false,
                         int64_t stop_after = 0) {
  TrainRequest args;
  args.recipe = recipe;
  args.out = out.string();
  args.overrides = std::move(overrides);
  args.resume = resume;
  args.stop_after = stop_after;
  args.progress = ProgressMode::kNone;
  ::testing::internal::CaptureStdout();
  try {
    const int code = run_training(args);
    ::testing::internal::GetCapturedStdout();
    return code;
  } catch (...) {
    ::testing::internal::GetCapturedStdout();
    throw;
  }
}

/// The run's latest checkpoint directory (a test failure when it has none).
inline std::filesystem::path latest_checkpoint(const std::filesystem::path& run) {
  auto dir = io::find_latest(run);
  EXPECT_TRUE(dir.has_value()) << run;
  return dir.value_or(std::filesystem::path());
}

}  // namespace rota::app::testing
