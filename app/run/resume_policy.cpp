// The resume decision for a run directory (see resume_policy.h).
#include "app/run/resume_policy.h"

#include <sstream>

#include <fmt/format.h>

#include "framework/io/checkpoint.h"
#include "framework/io/checkpoint_paths.h"
#include "framework/io/log.h"

namespace fs = std::filesystem;

namespace rota::app {

std::string first_difference(const std::string& saved, const std::string& now) {
  std::istringstream sa(saved), sb(now);
  std::string la, lb;
  int line = 0;
  while (true) {
    const bool more_a = static_cast<bool>(std::getline(sa, la));
    const bool more_b = static_cast<bool>(std::getline(sb, lb));
    ++line;
    if (!more_a && !more_b) return "";
    if (!more_a) la = "(end)";
    if (!more_b) lb = "(end)";
    if (la != lb) return fmt::format("line {}: checkpoint has `{}`, now `{}`", line, la, lb);
  }
}

ResumeDecision decide_resume(const fs::path& run_dir, bool resume, const std::string& recipe_text) {
  ResumeDecision decision;
  const std::optional<fs::path> found =
      fs::exists(run_dir) ? io::find_latest(run_dir) : std::nullopt;
  if (found && !resume) {
    decision.refusal = fmt::format(
        "{} already holds a run (latest checkpoint {}); pass --resume to continue it, or --out "
        "DIR to start a new run elsewhere",
        run_dir.string(), found->string());
  } else if (found) {
    const io::Checkpoint saved = io::load_checkpoint(*found);
    if (saved.recipe_text != recipe_text) {
      decision.refusal = fmt::format(
          "--resume: the recipe differs from the one {} was trained with ({}); resume with the "
          "same recipe and --set overrides",
          found->string(), first_difference(saved.recipe_text, recipe_text));
    }
  } else if (resume) {
    io::log_info("--resume: {} has no checkpoint yet; starting from scratch", run_dir.string());
  }
  decision.latest = found;
  return decision;
}

}  // namespace rota::app
