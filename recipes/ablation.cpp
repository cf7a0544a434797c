// Loading ablations: checks the file, then builds (and validates) every run's recipe.
#include "recipes/ablation.h"

#include <cctype>
#include <map>
#include <set>
#include <sstream>

#include "recipes/field_path.h"
#include "recipes/loader.h"
#include "recipes/overrides.h"
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
  if (ablation.variant_size() == 0 && ablation.axis_size() == 0) {
    issues.emplace_back("variant", "at least one variant or axis is required");
  }
  auto check_names = [&issues](const auto& items, const std::string& prefix,
                               const std::string& what) {
    std::set<std::string> names;
    for (int i = 0; i < items.size(); ++i) {
      const std::string& name = items.Get(i).name();
      const std::string path = prefix + "[" + std::to_string(i) + "].name";
      if (!safe_name(name)) {
        issues.emplace_back(path, "'" + name +
                                      "' must be non-empty and use only letters, "
                                      "digits, '_', '-', '.' (it names run directories)");
      } else if (!names.insert(name).second) {
        issues.emplace_back(path, "'" + name + "' is used by two " + what);
      }
    }
  };
  check_names(ablation.variant(), "variant", "variants");
  check_names(ablation.axis(), "axis", "axes");
  for (int a = 0; a < ablation.axis_size(); ++a) {
    const std::string prefix = "axis[" + std::to_string(a) + "]";
    if (ablation.axis(a).name() == "variant" && ablation.variant_size() > 0) {
      issues.emplace_back(prefix + ".name",
                          "'variant' names the variant list's own axis; choose another name");
    }
    if (ablation.axis(a).level_size() == 0) {
      issues.emplace_back(prefix + ".level", "at least one is required");
    }
    check_names(ablation.axis(a).level(), prefix + ".level", "levels of this axis");
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

/// Whether `prefix` is `path` or one of its enclosing fields ("model.position" of
/// "model.position.lrpe.p").
bool is_path_prefix(const std::string& prefix, const std::string& path) {
  return path.rfind(prefix, 0) == 0 && (path.size() == prefix.size() || path[prefix.size()] == '.');
}

bool is_append(const std::string& text) {
  const size_t equals = text.find('=');
  return equals != std::string::npos && equals > 0 && text[equals - 1] == '+';
}

/// Why applying `later` after `earlier` undoes what `earlier` set, or "" when it does not:
/// `later` replaces earlier's field or an enclosing message (appending to the same repeated
/// field is fine), or selects another member of a oneof that `earlier` chose.
std::string override_conflict(const std::string& earlier, const std::string& later) {
  const std::string earlier_path = override_path(earlier);
  const std::string later_path = override_path(later);
  if (earlier_path.empty() || later_path.empty()) return "";
  if (is_path_prefix(later_path, earlier_path)) {
    if (later_path == earlier_path && is_append(later)) return "";
    return "replaces " + earlier_path;
  }
  // Apply `earlier` alone, then walk `later`'s path: a oneof on it with another member set
  // would be switched (and that member cleared) by `later`.
  Recipe scratch;
  try {
    apply_override(scratch, earlier);
  } catch (const RecipeError&) {
    return "";  // a bad override: loading the variant's recipe reports it
  }
  const google::protobuf::Message* message = &scratch;
  std::string walked;
  for (const PathPart& part : split_path(later_path)) {
    const auto* field = message->GetDescriptor()->FindFieldByName(part.name);
    if (field == nullptr) return "";
    const auto* reflection = message->GetReflection();
    if (const auto* oneof = field->real_containing_oneof()) {
      const auto* chosen = reflection->GetOneofFieldDescriptor(*message, oneof);
      if (chosen != nullptr && chosen != field) {
        return "selects " + walked + field->name() + ", which clears " + walked + chosen->name();
      }
    }
    if (field->is_repeated() || field->cpp_type() != field->CPPTYPE_MESSAGE ||
        !reflection->HasField(*message, field)) {
      return "";
    }
    message = &reflection->GetMessage(*message, field);
    walked += field->name() + ".";
  }
  return "";
}

/// The factors of a grid: the variant list (when it has entries), then the axes.
std::vector<std::pair<std::string, std::vector<const Variant*>>> grid_factors(
    const Ablation& ablation) {
  std::vector<std::pair<std::string, std::vector<const Variant*>>> factors;
  if (ablation.variant_size() > 0) {
    factors.emplace_back("variant", std::vector<const Variant*>{});
    for (const Variant& v : ablation.variant()) factors.back().second.push_back(&v);
  }
  for (const Axis& axis : ablation.axis()) {
    factors.emplace_back(axis.name(), std::vector<const Variant*>{});
    for (const Variant& level : axis.level()) factors.back().second.push_back(&level);
  }
  return factors;
}

/// Resolves `baseline` to one baseline index per variant; "" or the problem.
std::string resolve_baseline(AblationPlan& plan) {
  const std::string& baseline = plan.ablation.baseline();
  const int count = plan.ablation.variant_size();
  std::vector<std::string> names;
  for (const Variant& v : plan.ablation.variant()) names.push_back(v.name());
  for (int v = 0; v < count; ++v) {
    if (names[v] == baseline) {
      plan.baseline_of.assign(count, v);
      return "";
    }
  }
  const size_t equals = baseline.find('=');
  if (equals == std::string::npos) {
    return "'" + baseline + "' is not a variant" + did_you_mean(baseline, names) +
           (plan.axes.empty() ? "" : "; to compare within an axis write AXIS=LEVEL") +
           "; the variants: " + join(names);
  }
  const std::string axis_name = baseline.substr(0, equals);
  const std::string level_name = baseline.substr(equals + 1);
  std::vector<std::string> axis_names;
  for (const GridAxis& axis : plan.axes) axis_names.push_back(axis.name);
  int axis = -1;
  for (size_t a = 0; a < plan.axes.size(); ++a) {
    if (plan.axes[a].name == axis_name) axis = static_cast<int>(a);
  }
  if (axis < 0) {
    return plan.axes.empty()
               ? "'" + baseline + "': the ablation has no axes; name a variant"
               : "'" + axis_name + "' is not an axis" + did_you_mean(axis_name, axis_names) +
                     "; the axes: " + join(axis_names);
  }
  const std::vector<std::string>& level_names = plan.axes[axis].levels;
  int level = -1;
  for (size_t l = 0; l < level_names.size(); ++l) {
    if (level_names[l] == level_name) level = static_cast<int>(l);
  }
  if (level < 0) {
    return "'" + level_name + "' is not a level of axis '" + axis_name + "'" +
           did_you_mean(level_name, level_names) + "; its levels: " + join(level_names);
  }
  std::map<std::vector<int>, int> index_of;
  for (int v = 0; v < count; ++v) index_of[plan.levels[v]] = v;
  plan.baseline_of.resize(count);
  for (int v = 0; v < count; ++v) {
    std::vector<int> key = plan.levels[v];
    key[axis] = level;
    plan.baseline_of[v] = index_of.at(key);
  }
  return "";
}

}  // namespace

std::vector<Variant> expand_variants(const Ablation& ablation, const std::string& file,
                                     AblationPlan* plan) {
  if (ablation.axis_size() == 0) {
    return {ablation.variant().begin(), ablation.variant().end()};
  }
  const auto factors = grid_factors(ablation);
  int64_t total = 1;
  for (const auto& [name, levels] : factors) {
    total *= static_cast<int64_t>(levels.size());
    if (total > kMaxVariants) {
      throw RecipeError(file + ": axis: the grid has more than " + std::to_string(kMaxVariants) +
                        " variants");
    }
  }
  if (plan != nullptr) {
    plan->axes.clear();
    plan->levels.clear();
    for (const auto& [name, levels] : factors) {
      GridAxis axis{name, {}};
      for (const Variant* level : levels) axis.levels.push_back(level->name());
      plan->axes.push_back(std::move(axis));
    }
  }
  std::vector<Variant> variants;
  std::set<std::string> names;
  std::set<std::string> conflicts;
  std::string problems;
  auto label = [&factors](size_t f, const Variant& level) {
    return (factors[f].first == "variant" ? "variant '"
                                          : "axis '" + factors[f].first + "' level '") +
           level.name() + "'";
  };
  for (int64_t index = 0; index < total; ++index) {
    std::vector<int> digits(factors.size());
    int64_t rest = index;
    for (size_t f = factors.size(); f-- > 0;) {
      const auto size = static_cast<int64_t>(factors[f].second.size());
      digits[f] = static_cast<int>(rest % size);
      rest /= size;
    }
    Variant variant;
    std::string name, description;
    std::vector<std::pair<size_t, std::string>> overrides;  // (factor, text)
    for (size_t f = 0; f < factors.size(); ++f) {
      const Variant& level = *factors[f].second[digits[f]];
      name += (name.empty() ? "" : "_") + level.name();
      if (!level.description().empty()) {
        description += (description.empty() ? "" : ", ") + level.description();
      }
      for (const std::string& text : level.overrides()) overrides.emplace_back(f, text);
    }
    for (size_t j = 0; j < overrides.size(); ++j) {
      for (size_t i = 0; i < j; ++i) {
        if (overrides[i].first == overrides[j].first) continue;
        const std::string why = override_conflict(overrides[i].second, overrides[j].second);
        if (why.empty()) continue;
        const size_t fi = overrides[i].first, fj = overrides[j].first;
        const std::string line =
            file + ": " + label(fj, *factors[fj].second[digits[fj]]) + ": '" + overrides[j].second +
            "' " + why + ", set by " + label(fi, *factors[fi].second[digits[fi]]) + " ('" +
            overrides[i].second + "'); the overrides of two axes must set different fields";
        if (conflicts.insert(line).second) problems += (problems.empty() ? "" : "\n") + line;
      }
    }
    if (!names.insert(name).second) {
      problems += (problems.empty() ? "" : "\n") + file + ": axis: two variants are named '" +
                  name + "' (level names joined with '_'); rename a level";
    }
    variant.set_name(name);
    if (!description.empty()) variant.set_description(description);
    for (const auto& [factor, text] : overrides) variant.add_overrides(text);
    variants.push_back(std::move(variant));
    if (plan != nullptr) plan->levels.push_back(std::move(digits));
  }
  if (!problems.empty()) throw RecipeError(problems);
  return variants;
}

AblationPlan load_ablation(const std::filesystem::path& file,
                           const std::vector<std::string>& overrides) {
  const std::string text = read_text_file(file);
  SourceMap source(file.string());
  AblationPlan plan;
  plan.file = file;
  parse_text(text, source, plan.ablation);
  Ablation& ablation = plan.ablation;
  for (const std::string& text_override : overrides) ablation.add_overrides(text_override);

  std::string report;
  auto add = [&report](const std::string& line) {
    if (!line.empty()) report += (report.empty() ? "" : "\n") + line;
  };
  for (const auto& [path, message] : check_fields(ablation)) {
    add(source.locate(Ablation::descriptor(), path) + ": " + path + ": " + message);
  }
  if (!report.empty()) throw RecipeError(report);

  if (!ablation.has_name()) ablation.set_name(file.stem().string());
  {
    std::vector<Variant> variants = expand_variants(ablation, file.string(), &plan);
    ablation.clear_variant();
    for (Variant& v : variants) *ablation.add_variant() = std::move(v);
  }
  if (ablation.has_baseline()) {
    const std::string problem = resolve_baseline(plan);
    if (!problem.empty()) {
      throw RecipeError(source.locate(Ablation::descriptor(), "baseline") +
                        ": baseline: " + problem);
    }
  }
  const std::filesystem::path directory = file.parent_path();
  plan.base_recipe = directory / ablation.base();
  if (ablation.has_follow_up()) plan.follow_up_recipe = directory / ablation.follow_up().recipe();

  // Every run must load, so a bad override fails now rather than hours into the ablation.
  const uint64_t seed = ablation.seeds(0);
  for (int i = 0; i < ablation.variant_size(); ++i) {
    const Variant& variant = ablation.variant(i);
    const std::string where =
        plan.axes.empty()
            ? source.locate(Ablation::descriptor(), "variant[" + std::to_string(i) + "]")
            : file.string();
    const std::string prefix = where + ": variant '" + variant.name() + "': ";
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
