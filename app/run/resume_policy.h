// Whether `rota train` starts fresh, continues the run directory's latest checkpoint, or refuses.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace rota::app {

/// The decision for a run directory.
struct ResumeDecision {
  std::optional<std::filesystem::path> latest;  // the checkpoint to continue from, if any
  std::string refusal;                          // non-empty: why the run must not start
};

/// Looks at `run_dir`: a checkpoint there is continued only with --resume (`resume`) and only
/// when it was trained with the same resolved recipe (`recipe_text`) — or one whose only change
/// is a longer run (train.steps or train.epochs raised: the run is extended, and a decaying
/// schedule is recomputed over the new length); without a checkpoint --resume starts from
/// scratch (and says so).
ResumeDecision decide_resume(const std::filesystem::path& run_dir, bool resume,
                             const std::string& recipe_text);

/// The first line where two recipe texts differ, for the resume mismatch message; empty when
/// they are equal.
std::string first_difference(const std::string& saved, const std::string& now);

}  // namespace rota::app
