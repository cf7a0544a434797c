// One example read from a user's data file: its texts, its label and where it came from.
#pragma once

#include <cstdint>
#include <string>

namespace rota::data {

/// A record of a JSONL, CSV or TSV file (or a line of a text file: text only).
struct TextRecord {
  std::string text;
  std::string text_pair;  // empty when no text_pair_field
  std::string label;      // empty when no label_field
  std::string file;
  int64_t line = 0;        // 1-based line where the record starts
  bool text_file = false;  // a line of a TEXT file (no fields)

  std::string origin() const { return file + ":" + std::to_string(line); }
};

/// The fields a record is made of: names of JSONL keys (dotted paths allowed) or CSV/TSV
/// header columns. Empty text_pair / label: not read.
struct RecordFields {
  std::string text = "text";
  std::string text_pair;
  std::string label;
};

}  // namespace rota::data
