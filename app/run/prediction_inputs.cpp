// Reading the examples of `rota predict` (see prediction_inputs.h).
#include "app/run/prediction_inputs.h"

#include <fmt/format.h>

#include "framework/base/error.h"
#include "framework/base/file_io.h"
#include "recipes/recipe_error.h"

namespace rota::app {
namespace {

std::string lowercase(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

// Text: every line is an example, blank lines included.
std::vector<PredictionExample> text_examples(const std::filesystem::path& input,
                                             const std::string& bytes) {
  std::vector<PredictionExample> examples;
  size_t begin = 0;
  int64_t line = 1;
  while (begin < bytes.size()) {
    size_t end = bytes.find('\n', begin);
    const size_t next = end == std::string::npos ? bytes.size() : end + 1;
    if (end == std::string::npos) end = bytes.size();
    if (end > begin && bytes[end - 1] == '\r') --end;
    PredictionExample example;
    example.line = line++;
    example.text = bytes.substr(begin, end - begin);
    ROTA_CHECK(example.text.find('\0') == std::string::npos,
               "predict: {}:{}: the line holds a NUL byte (is this a binary file?)", input.string(),
               example.line);
    examples.push_back(std::move(example));
    begin = next;
  }
  return examples;
}

}  // namespace

PredictionFormat prediction_format(const std::filesystem::path& input, const std::string& name) {
  const std::string chosen = lowercase(name);
  if (chosen == "text") return PredictionFormat::kText;
  if (chosen == "jsonl") return PredictionFormat::kJsonl;
  if (chosen == "csv") return PredictionFormat::kCsv;
  if (chosen == "tsv") return PredictionFormat::kTsv;
  if (chosen != "auto") {
    throw recipes::RecipeError(
        fmt::format("--format: '{}' is not a format (auto, text, jsonl, csv, tsv)", name));
  }
  const std::string extension = lowercase(input.extension().string());
  if (extension == ".jsonl" || extension == ".ndjson") return PredictionFormat::kJsonl;
  if (extension == ".csv") return PredictionFormat::kCsv;
  if (extension == ".tsv") return PredictionFormat::kTsv;
  return PredictionFormat::kText;
}

std::vector<PredictionExample> read_prediction_examples(const std::filesystem::path& input,
                                                        PredictionFormat format,
                                                        const std::string& text_field,
                                                        const std::string& text_pair_field) {
  const std::string bytes = read_file(input);
  switch (format) {
    case PredictionFormat::kText:
      if (!text_pair_field.empty()) {
        throw recipes::RecipeError(
            "--text-pair-field: a text input has one text per line; use JSONL, CSV or TSV for "
            "sentence pairs");
      }
      return text_examples(input, bytes);
    default:
      break;
  }
  fail("predict: {}: format not readable yet", input.string());
}

}  // namespace rota::app
