// The examples `rota predict` reads: lines of text, JSON Lines records or CSV/TSV rows.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "data/source/file_format.h"

namespace rota::app {

/// One input example and where it came from.
struct PredictionExample {
  int64_t line = 0;       // 1-based line of the file where the example starts
  std::string text;       // the text (the first text field)
  std::string text_pair;  // the second text of a sentence pair ("" when none)
};

/// The format `--format NAME` asks for: "auto" by extension (.jsonl/.ndjson JSONL, .csv CSV,
/// .tsv TSV, anything else text), or "text", "jsonl", "csv", "tsv". Throws
/// recipes::RecipeError for another name.
data::FileFormat prediction_format(const std::filesystem::path& input, const std::string& name);

/// Reads every example of `input`, with the checks of the data layer's file sources (NUL
/// bytes and invalid UTF-8 are errors naming file:line:column). Text: one example per line,
/// blank lines included, so output line k answers input line k. JSONL: one object per
/// non-blank line, the field `text_field` (a dotted path reaches into objects). CSV/TSV
/// (RFC 4180, a header row): one example per record, the column `text_field`.
/// `text_pair_field` (not for text): the second text of a pair.
std::vector<PredictionExample> read_prediction_examples(const std::filesystem::path& input,
                                                        data::FileFormat format,
                                                        const std::string& text_field,
                                                        const std::string& text_pair_field);

}  // namespace rota::app
