// The resume decision for a run directory (see resume_policy.h).
#include "app/run/resume_policy.h"

#include <optional>
#include <sstream>
#include <utility>

#include <fmt/format.h>

#include "framework/io/checkpoint.h"
#include "framework/io/checkpoint_paths.h"
#include "framework/io/log.h"
#include "recipes/loader.h"
#include "recipes/recipe_error.h"

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

bool same_resolved_recipe(const std::string& saved_text, const std::string& now_text,
                          const std::string& where) {
  if (saved_text == now_text) return true;
  try {
    return recipes::format_recipe(recipes::load_recipe_text(saved_text, where)) ==
           recipes::format_recipe(recipes::load_recipe_text(now_text, "the recipe"));
  } catch (const recipes::RecipeError&) {
    return false;
  }
}

namespace {

/// The saved and the current recipe, loaded and resolved; std::nullopt when either does not load.
std::optional<std::pair<recipes::Recipe, recipes::Recipe>> load_both(const std::string& saved_text,
                                                                     const std::string& now_text,
                                                                     const std::string& where) {
  try {
    return std::pair{recipes::load_recipe_text(saved_text, where),
                     recipes::load_recipe_text(now_text, "the recipe")};
  } catch (const recipes::RecipeError&) {
    return std::nullopt;
  }
}

/// When `now` differs from `saved` only by a longer train.steps / train.epochs: the note that the
/// run is extended (with what happens to the schedule); else "".
std::string run_extension(const std::string& saved_text, const std::string& now_text,
                          const std::string& where) {
  if (saved_text == now_text) return "";
  const auto loaded = load_both(saved_text, now_text, where);
  if (!loaded) return "";
  const auto& [saved, now] = *loaded;
  const recipes::Train& a = saved.train();
  const recipes::Train& b = now.train();
  const bool steps = a.has_steps() && b.has_steps() && b.steps() > a.steps();
  const bool epochs = a.has_epochs() && b.has_epochs() && b.epochs() > a.epochs();
  if (!steps && !epochs) return "";
  recipes::Recipe aligned = saved;
  *aligned.mutable_train() = saved.train();
  if (steps) aligned.mutable_train()->set_steps(b.steps());
  if (epochs) aligned.mutable_train()->set_epochs(b.epochs());
  if (recipes::format_recipe(aligned) != recipes::format_recipe(now)) return "";
  const recipes::Schedule::Kind kind = now.schedule().kind();
  const bool decays = kind != recipes::Schedule::CONSTANT;
  return fmt::format(
      "--resume: extending the run from {} to {}{}",
      steps ? std::to_string(a.steps()) + " steps" : fmt::format("{:g} epochs", a.epochs()),
      steps ? std::to_string(b.steps()) + " steps" : fmt::format("{:g} epochs", b.epochs()),
      decays ? fmt::format("; the {} schedule is recomputed over the new length, so the learning "
                           "rate continues from the new curve (it rises again at the seam if "
                           "the old one had decayed)",
                           recipes::Schedule::Kind_Name(kind))
             : "");
}

/// When `now` differs from `saved` only in how fresh weights start (model.init_scheme and
/// init_std; e.g. a run begun before the default became PYTORCH): the overrides that resume it,
/// with why; else "". Resumed weights come from the checkpoint, but the recipe must still say
/// how the run began.
std::string initialisation_hint(const std::string& saved_text, const std::string& now_text,
                                const std::string& where) {
  const auto loaded = load_both(saved_text, now_text, where);
  if (!loaded) return "";
  const auto& [saved, now] = *loaded;
  const recipes::Model& began = saved.model();
  const bool has_sigma =
      began.init_scheme() == recipes::Model::NORMAL || began.init_scheme() == recipes::Model::GPT2;
  recipes::Recipe aligned = now;
  aligned.mutable_model()->set_init_scheme(began.init_scheme());
  if (has_sigma) {
    aligned.mutable_model()->set_init_std(began.init_std());
  } else {
    aligned.mutable_model()->clear_init_std();
  }
  if (recipes::format_recipe(aligned) != recipes::format_recipe(saved)) return "";
  std::string overrides =
      "--set model.init_scheme=" + recipes::Model::InitScheme_Name(began.init_scheme());
  if (has_sigma) overrides += fmt::format(" --set model.init_std={:g}", began.init_std());
  return fmt::format(
      "--resume: {} was started with model.init_scheme {}{}, the recipe now asks for {} (the "
      "default is PYTORCH since issue 39; before, NORMAL with σ 0.02). Only how fresh weights "
      "start differs, and a resumed run takes its weights from the checkpoint: resume with {}",
      where, recipes::Model::InitScheme_Name(began.init_scheme()),
      has_sigma ? fmt::format(" (σ {:g})", began.init_std()) : "",
      recipes::Model::InitScheme_Name(now.model().init_scheme()), overrides);
}

}  // namespace

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
    const std::string extension = run_extension(saved.recipe_text, recipe_text, found->string());
    if (!extension.empty()) {
      io::log_info("{}", extension);
    } else if (!same_resolved_recipe(saved.recipe_text, recipe_text, found->string())) {
      decision.refusal = initialisation_hint(saved.recipe_text, recipe_text, found->string());
      if (decision.refusal.empty())
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
