// `rota recipe show` and `rota recipe diff` (see recipe_run.h).
#include "app/run/recipe_run.h"

#include <cstdio>
#include <filesystem>
#include <map>

#include <google/protobuf/text_format.h>

#include "app/run/exit_codes.h"
#include "framework/io/checkpoint.h"
#include "framework/io/checkpoint_paths.h"
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

void flatten(const pb::Message& message, const std::string& path,
             std::vector<std::pair<std::string, std::string>>& out) {
  const pb::Reflection* reflection = message.GetReflection();
  std::vector<const pb::FieldDescriptor*> fields;
  reflection->ListFields(message, &fields);
  for (const pb::FieldDescriptor* field : fields) {
    const std::string field_path = path.empty() ? field->name() : path + "." + field->name();
    const int count = field->is_repeated() ? reflection->FieldSize(message, field) : 1;
    for (int i = 0; i < count; ++i) {
      const std::string element =
          field->is_repeated() ? field_path + "[" + std::to_string(i) + "]" : field_path;
      const int index = field->is_repeated() ? i : -1;
      if (field->cpp_type() != pb::FieldDescriptor::CPPTYPE_MESSAGE) {
        out.emplace_back(element, value_text(message, field, index));
        continue;
      }
      const pb::Message& child = field->is_repeated()
                                     ? reflection->GetRepeatedMessage(message, field, i)
                                     : reflection->GetMessage(message, field);
      const size_t before = out.size();
      flatten(child, element, out);
      if (out.size() == before) out.emplace_back(element, "{}");  // set and empty: none {}
    }
  }
}

}  // namespace

recipes::Recipe load_recipe_or_run(const std::string& path,
                                   const std::vector<std::string>& overrides) {
  if (fs::is_directory(path)) {
    const fs::path checkpoint = io::resolve_checkpoint(path);
    const fs::path recipe = checkpoint / io::kRecipeFile;
    return recipes::load_recipe_text(recipes::read_text_file(recipe), recipe.string(), overrides);
  }
  return recipes::load_recipe(path, overrides);
}

std::vector<std::pair<std::string, std::string>> flatten_recipe(const recipes::Recipe& recipe) {
  std::vector<std::pair<std::string, std::string>> out;
  flatten(recipe, "", out);
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
