// Loading recipes (parse, upgrade, override, resolve, validate) and printing them.
#include "recipes/loader.h"

#include <fstream>
#include <sstream>

#include <google/protobuf/text_format.h>

#include "recipes/model_inheritance.h"
#include "recipes/overrides.h"
#include "recipes/resolve.h"
#include "recipes/text_parse.h"
#include "recipes/upgrade.h"
#include "recipes/validate.h"

namespace rota::recipes {

namespace {

/// True when `a` is `b` or a dotted ancestor/descendant of it ("model" vs "model.heads").
bool related_paths(const std::string& a, const std::string& b) {
  const std::string& shorter = a.size() <= b.size() ? a : b;
  const std::string& longer = a.size() <= b.size() ? b : a;
  if (longer.compare(0, shorter.size(), shorter) != 0) return false;
  return longer.size() == shorter.size() || longer[shorter.size()] == '.' ||
         longer[shorter.size()] == '[';
}

struct AppliedOverride {
  std::string text;
  std::string path;
};

/// One line per issue: located at the last override that touched the field, else in the file.
std::string format_issues(const std::vector<Issue>& issues, const SourceMap& source,
                          const std::vector<AppliedOverride>& applied) {
  std::string report;
  for (const Issue& issue : issues) {
    std::string where;
    for (const AppliedOverride& override_ : applied) {
      if (related_paths(override_.path, issue.path)) where = override_display(override_.text);
    }
    if (where.empty()) where = source.locate(Recipe::descriptor(), issue.path);
    if (!report.empty()) report += "\n";
    report += where + ": " + issue.path + ": " + issue.message;
    // A field of the file that an override of a sibling made inapplicable (e.g. the file's
    // lrpe.pairing after --set model.position.lrpe.type=3): say how to replace the block.
    const size_t dot = issue.path.rfind('.');
    const std::string parent = dot == std::string::npos ? "" : issue.path.substr(0, dot);
    if (issue.message.rfind("does not apply", 0) == 0 && !parent.empty() &&
        where.rfind("--", 0) != 0) {
      for (const AppliedOverride& override_ : applied) {
        if (override_.path.rfind(parent + ".", 0) == 0) {
          report += " (after " + override_display(override_.text) +
                    ", replace the whole block instead: --set '" + parent + "={...}')";
          break;
        }
      }
    }
  }
  return report;
}

std::string file_stem(std::string_view source_name) {
  return std::filesystem::path(std::string(source_name)).stem().string();
}

}  // namespace

std::string read_text_file(const std::filesystem::path& file) {
  std::error_code error;
  if (std::filesystem::is_directory(file, error)) {
    throw RecipeError(file.string() + ": is a directory, not a recipe file");
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) throw RecipeError(file.string() + ": cannot open the file");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw RecipeError(file.string() + ": cannot read the file");
  return text.str();
}

Recipe load_recipe(const std::filesystem::path& file, std::span<const std::string> overrides,
                   const PretrainedModel& pretrained) {
  return load_recipe_text(read_text_file(file), file.string(), overrides, pretrained);
}

Recipe load_recipe_text(std::string_view text, std::string_view source_name,
                        std::span<const std::string> overrides, const PretrainedModel& pretrained) {
  // A UTF-8 byte order mark (some editors write one) is not part of the text.
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);
  SourceMap source{std::string(source_name)};
  Recipe recipe;
  try {
    parse_text(text, source, recipe);
  } catch (const RecipeError&) {
    // A recipe from a newer schema fails on its new fields; say why instead.
    const std::optional<int> version = peek_version(text, Recipe::default_instance());
    if (version && *version > kRecipeVersion) {
      Recipe only_version;
      only_version.set_version(*version);
      upgrade_recipe(only_version, std::string(source_name));  // throws the version error
    }
    throw;
  }
  upgrade_recipe(recipe, source.locate(Recipe::descriptor(), "version"));

  std::vector<AppliedOverride> applied;
  for (const std::string& override_ : overrides) {
    applied.push_back({override_, apply_override(recipe, override_)});
  }
  if (pretrained && recipe.has_finetune() && !recipe.finetune().init_from().empty()) {
    if (const std::optional<Model> model = pretrained(recipe.finetune().init_from())) {
      inherit_model(recipe, *model);
    }
  }
  if (!recipe.has_name()) recipe.set_name(file_stem(source_name));
  resolve_recipe(recipe);
  const std::vector<Issue> issues = validate_recipe(recipe);
  if (!issues.empty()) throw RecipeError(format_issues(issues, source, applied));
  return recipe;
}

std::string format_recipe(const Recipe& recipe, std::string_view header) {
  std::string out;
  std::istringstream lines{std::string(header)};
  for (std::string line; std::getline(lines, line);)
    out += line.empty() ? "#\n" : "# " + line + "\n";
  std::string body;
  google::protobuf::TextFormat::Printer printer;
  printer.SetUseUtf8StringEscaping(true);  // keep "θ" readable instead of octal escapes
  printer.PrintToString(recipe, &body);
  return out + body;
}

}  // namespace rota::recipes
