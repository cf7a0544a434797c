// Loading ablations: checks the file, then builds (and validates) every run's recipe.
#include "recipes/ablation.h"

#include <cctype>
#include <set>
#include <sstream>

#include "recipes/loader.h"
#include "recipes/recipe_error.h"
#include "recipes/text_parse.h"
#include "recipes/upgrade.h"

namespace rota::recipes {

namespace {

bool safe_name(const std::string& name) {
  if (name.empty()) return false;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.') {
      return false;
    }
  }
  return name != "." && name != "..";
}

/// The field path of an override ("model.position" for "model.position={...}").
std::string override_path(const std::string& text) {
  std::string path = text.substr(0, text.find('='));
  if (!path.empty() && path.back() == '+') path.pop_back();
  const size_t begin = path.find_first_not_of(" \t");
  const size_t end = path.find_last_not_of(" \t");
  return begin == std::string::npos ? "" : path.substr(begin, end - begin + 1);
}

bool is_model_override(const std::string& text) {
  const std::string path = override_path(text);
  return path == "model" || path.rfind("model.", 0) == 0;
}

/// Prefixes every line of a (multi-line) error message.
std::string prefix_lines(const std::string& prefix, const std::string& message) {
  std::istringstream lines(message);
  std::string out;
  for (std::string line; std::getline(lines, line);) {
    if (!out.empty()) out += "\n";
    out += prefix + line;
  }
  return out;
}

/// Problems with the ablation's own fields, as (path, message).
std::vector<std::pair<std::string, std::string>> check_fields(const Ablation& ablation) {
  std::vector<std::pair<std::string, std::string>> issues;
  if (!ablation.has_version()) {
    issues.emplace_back("version",
                        "missing; this Rota reads version " + std::to_string(kRecipeVersion));
  } else if (ablation.version() != kRecipeVersion) {
    issues.emplace_back("version", "must be " + std::to_string(kRecipeVersion) + " (got " +
                                       std::to_string(ablation.version()) + ")");
  }
  if (ablation.base().empty()) issues.emplace_back("base", "required: the base recipe's path");
  if (ablation.variant_size() == 0) issues.emplace_back("variant", "at least one is required");
  std::set<std::string> names;
  for (int i = 0; i < ablation.variant_size(); ++i) {
    const std::string& name = ablation.variant(i).name();
    const std::string path = "variant[" + std::to_string(i) + "].name";
    if (!safe_name(name)) {
      issues.emplace_back(path, "'" + name +
                                    "' must be non-empty and use only letters, "
                                    "digits, '_', '-', '.' (it names run directories)");
    } else if (!names.insert(name).second) {
      issues.emplace_back(path, "'" + name + "' is used by two variants");
    }
  }
  if (ablation.seeds_size() == 0) issues.emplace_back("seeds", "at least one is required");
  std::set<uint64_t> seeds;
  for (int i = 0; i < ablation.seeds_size(); ++i) {
    if (!seeds.insert(ablation.seeds(i)).second) {
      issues.emplace_back("seeds[" + std::to_string(i) + "]",
                          "seed " + std::to_string(ablation.seeds(i)) + " is listed twice");
    }
  }
  std::set<int> multipliers;
  for (int i = 0; i < ablation.context_multipliers_size(); ++i) {
    const int m = ablation.context_multipliers(i);
    const std::string path = "context_multipliers[" + std::to_string(i) + "]";
    if (m < 1) {
      issues.emplace_back(path, "must be >= 1 (got " + std::to_string(m) + ")");
    } else if (!multipliers.insert(m).second) {
      issues.emplace_back(path, std::to_string(m) + " is listed twice");
    }
  }
  if (ablation.has_follow_up() && ablation.follow_up().recipe().empty()) {
    issues.emplace_back("follow_up.recipe", "required: the second-stage recipe's path");
  }
  return issues;
}

std::string run_name(const AblationPlan& plan, const Variant& variant, uint64_t seed) {
  return plan.ablation.name() + "-" + variant.name() + "-seed" + std::to_string(seed);
}

}  // namespace

AblationPlan load_ablation(const std::filesystem::path& file) {
  const std::string text = read_text_file(file);
  SourceMap source(file.string());
  AblationPlan plan;
  plan.file = file;
  parse_text(text, source, plan.ablation);
  Ablation& ablation = plan.ablation;

  std::string report;
  auto add = [&report](const std::string& line) {
    if (!line.empty()) report += (report.empty() ? "" : "\n") + line;
  };
  for (const auto& [path, message] : check_fields(ablation)) {
    add(source.locate(Ablation::descriptor(), path) + ": " + path + ": " + message);
  }
  if (!report.empty()) throw RecipeError(report);

  if (!ablation.has_name()) ablation.set_name(file.stem().string());
  const std::filesystem::path directory = file.parent_path();
  plan.base_recipe = directory / ablation.base();
  if (ablation.has_follow_up()) plan.follow_up_recipe = directory / ablation.follow_up().recipe();

  // Every run must load, so a bad override fails now rather than hours into the ablation.
  const uint64_t seed = ablation.seeds(0);
  for (int i = 0; i < ablation.variant_size(); ++i) {
    const Variant& variant = ablation.variant(i);
    const std::string prefix =
        source.locate(Ablation::descriptor(), "variant[" + std::to_string(i) + "]") +
        ": variant '" + variant.name() + "': ";
    try {
      run_recipe(plan, variant, seed);
      if (ablation.has_follow_up()) {
        follow_up_recipe(plan, variant, seed, "first-stage-checkpoint");
      }
    } catch (const RecipeError& error) {
      add(prefix_lines(prefix, error.what()));
    }
  }
  if (!report.empty()) throw RecipeError(report);
  return plan;
}

std::vector<std::string> run_overrides(const AblationPlan& plan, const Variant& variant,
                                       uint64_t seed) {
  std::vector<std::string> overrides(plan.ablation.overrides().begin(),
                                     plan.ablation.overrides().end());
  overrides.insert(overrides.end(), variant.overrides().begin(), variant.overrides().end());
  overrides.push_back("train.seed=" + std::to_string(seed));
  return overrides;
}

Recipe run_recipe(const AblationPlan& plan, const Variant& variant, uint64_t seed) {
  Recipe recipe = load_recipe(plan.base_recipe, run_overrides(plan, variant, seed));
  recipe.set_name(run_name(plan, variant, seed));
  return recipe;
}

std::vector<std::string> follow_up_overrides(const AblationPlan& plan, const Variant& variant,
                                             uint64_t seed, const std::string& init_from) {
  std::vector<std::string> overrides;
  for (const std::string& text : plan.ablation.overrides()) {
    if (is_model_override(text)) overrides.push_back(text);
  }
  for (const std::string& text : variant.overrides()) {
    if (is_model_override(text)) overrides.push_back(text);
  }
  const FollowUp& follow_up = plan.ablation.follow_up();
  overrides.insert(overrides.end(), follow_up.overrides().begin(), follow_up.overrides().end());
  overrides.push_back("train.seed=" + std::to_string(seed));
  overrides.push_back("finetune.init_from=" + init_from);
  return overrides;
}

Recipe follow_up_recipe(const AblationPlan& plan, const Variant& variant, uint64_t seed,
                        const std::string& init_from) {
  if (!plan.ablation.has_follow_up()) {
    throw RecipeError(plan.file.string() + ": follow_up: the ablation has no follow-up stage");
  }
  Recipe recipe =
      load_recipe(plan.follow_up_recipe, follow_up_overrides(plan, variant, seed, init_from));
  recipe.set_name(run_name(plan, variant, seed) + "-" + plan.follow_up_recipe.stem().string());
  return recipe;
}

}  // namespace rota::recipes
