// The examples `rota predict` reads: lines of text, JSON Lines records or CSV/TSV rows.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace rota::app {

/// One input example and where it came from.
struct PredictionExample {
  int64_t line = 0;       // 1-based line of the file where the example starts
  std::string text;       // the text (the first text field)
  std::string text_pair;  // the second text of a sentence pair ("" when none)
};

enum class PredictionFormat { kText, kJsonl, kCsv, kTsv };

/// "auto" picks by extension (.jsonl/.ndjson, .csv, .tsv; anything else is text); "text",
/// "jsonl", "csv", "tsv" force it. Throws recipes::RecipeError for another name.
PredictionFormat prediction_format(const std::filesystem::path& input, const std::string& name);

/// Reads every example of `input`. Text: one example per line (the line without its "\n" or
/// "\r\n"; blank lines are examples too, so output line k answers input line k). JSONL: one
/// object per non-blank line, the string field `text_field`. CSV/TSV: a header row, then one
/// example per record, the named columns. `text_pair_field` (not for text): the second text.
/// Errors name the file and line.
std::vector<PredictionExample> read_prediction_examples(const std::filesystem::path& input,
                                                        PredictionFormat format,
                                                        const std::string& text_field,
                                                        const std::string& text_pair_field);

}  // namespace rota::app
