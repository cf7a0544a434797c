// `rota recipe show` and `rota recipe diff` (see recipe_run.h).
#include "app/run/recipe_run.h"

#include <cstdio>
#include <filesystem>
#include <map>

#include <google/protobuf/text_format.h>

#include "app/run/exit_codes.h"
#include "app/setup/finetune_setup.h"
#include "framework/io/checkpoint.h"
#include "framework/io/checkpoint_paths.h"
#include "recipes/field_path.h"
#include "recipes/loader.h"

namespace rota::app {

namespace fs = std::filesystem;
namespace pb = google::protobuf;

namespace {

std::string value_text(const pb::Message& message, const pb::FieldDescriptor* field, int index) {
  std::string text;
  pb::TextFormat::Printer printer;
  printer.SetUseUtf8StringEscaping(true);
  printer.PrintFieldValueToString(message, field, index, &text);
  return text;
}

}  // namespace

recipes::Recipe load_recipe_or_run(const std::string& path,
                                   const std::vector<std::string>& overrides) {
  if (fs::is_directory(path)) {
    const fs::path checkpoint = io::resolve_checkpoint(path);
    const fs::path recipe = checkpoint / io::kRecipeFile;
    return recipes::load_recipe_text(recipes::read_text_file(recipe), recipe.string(), overrides);
  }
  return recipes::load_recipe(path, overrides, pretrained_model);
}

std::vector<std::pair<std::string, std::string>> flatten_recipe(const recipes::Recipe& recipe) {
  std::vector<std::pair<std::string, std::string>> out;
  recipes::for_each_set_field(recipe, [&](const std::string& path, const pb::Message& parent,
                                          const pb::FieldDescriptor* field, int index) {
    if (field->cpp_type() != pb::FieldDescriptor::CPPTYPE_MESSAGE) {
      out.emplace_back(path, value_text(parent, field, index));
      return;
    }
    const pb::Reflection* reflection = parent.GetReflection();
    const pb::Message& child = index < 0 ? reflection->GetMessage(parent, field)
                                         : reflection->GetRepeatedMessage(parent, field, index);
    std::vector<const pb::FieldDescriptor*> set;
    child.GetReflection()->ListFields(child, &set);
    if (set.empty()) out.emplace_back(path, "{}");  // set and empty: none {}
  });
  return out;
}

std::vector<std::string> recipe_differences(const recipes::Recipe& a, const recipes::Recipe& b) {
  const auto fa = flatten_recipe(a), fb = flatten_recipe(b);
  std::map<std::string, std::string> in_b(fb.begin(), fb.end());
  std::map<std::string, std::string> in_a(fa.begin(), fa.end());
  std::vector<std::string> lines;
  for (const auto& [path, value] : fa) {
    const auto other = in_b.find(path);
    if (other == in_b.end()) {
      lines.push_back(path + ": " + value + " → (unset)");
    } else if (other->second != value) {
      lines.push_back(path + ": " + value + " → " + other->second);
    }
  }
  for (const auto& [path, value] : fb) {
    if (!in_a.count(path)) lines.push_back(path + ": (unset) → " + value);
  }
  return lines;
}

int run_recipe_show(const std::string& path, const std::vector<std::string>& overrides) {
  const recipes::Recipe recipe = load_recipe_or_run(path, overrides);
  std::fputs(recipes::format_recipe(
                 recipe, "the resolved recipe of " + path + " (every default written out)")
                 .c_str(),
             stdout);
  return kExitOk;
}

int run_recipe_diff(const std::string& a, const std::string& b) {
  const std::vector<std::string> lines =
      recipe_differences(load_recipe_or_run(a), load_recipe_or_run(b));
  if (lines.empty()) {
    std::printf("the recipes are the same (after resolving defaults)\n");
    return kExitOk;
  }
  std::printf("%zu field%s (%s → %s):\n", lines.size(), lines.size() == 1 ? " differs" : "s differ",
              a.c_str(), b.c_str());
  for (const std::string& line : lines) std::printf("  %s\n", line.c_str());
  return kExitOk;
}

}  // namespace rota::app
