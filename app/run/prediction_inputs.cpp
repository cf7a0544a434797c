// Reading the examples of `rota predict` (see prediction_inputs.h).
#include "app/run/prediction_inputs.h"

#include <cctype>

#include <fmt/format.h>

#include "data/source/file_source.h"
#include "recipes/recipe_error.h"

namespace rota::app {
namespace {

std::string lowercase(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

}  // namespace

data::FileFormat prediction_format(const std::filesystem::path& input, const std::string& name) {
  const std::string chosen = lowercase(name);
  if (chosen == "text") return data::FileFormat::kText;
  if (chosen == "jsonl") return data::FileFormat::kJsonl;
  if (chosen == "csv") return data::FileFormat::kCsv;
  if (chosen == "tsv") return data::FileFormat::kTsv;
  if (chosen != "auto") {
    throw recipes::RecipeError(
        fmt::format("--format: '{}' is not a format (auto, text, jsonl, csv, tsv)", name));
  }
  const std::optional<data::FileFormat> by_extension = data::format_from_extension(input);
  return by_extension.value_or(data::FileFormat::kText);
}

std::vector<PredictionExample> read_prediction_examples(const std::filesystem::path& input,
                                                        data::FileFormat format,
                                                        const std::string& text_field,
                                                        const std::string& text_pair_field) {
  if (format == data::FileFormat::kText && !text_pair_field.empty()) {
    throw recipes::RecipeError(
        "--text-pair-field: a text input holds one text per line; give sentence pairs as JSONL, "
        "CSV or TSV");
  }
  data::RecordFields fields;
  fields.text = text_field;
  fields.text_pair = text_pair_field;
  std::vector<PredictionExample> examples;
  data::for_each_file_record(input, format, fields, [&](const data::TextRecord& record) {
    examples.push_back({record.line, record.text, record.text_pair});
  });
  return examples;
}

}  // namespace rota::app
