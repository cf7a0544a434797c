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

/// True when two recipe texts describe the same run: equal, or equal once both are loaded and
/// resolved by this build (so a run recorded before a field with a default existed — its text
/// lacks the field — resumes under a build that writes the field). `where` names the saved text
/// in errors; a text that does not load compares as text only.
bool same_resolved_recipe(const std::string& saved_text, const std::string& now_text,
                          const std::string& where);

/// The first line where two recipe texts differ, for the resume mismatch message; empty when
/// they are equal.
std::string first_difference(const std::string& saved, const std::string& now);

}  // namespace rota::app
