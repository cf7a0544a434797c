// Finding where in a corpus split a character occurs, for messages about unknown symbols.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "data/corpus/corpus.h"

namespace rota::data {

/// Where a character is: file, 1-based line and column (characters), and for a JSONL/CSV/TSV
/// record the field it is in (column then counts within that field's text line).
struct SymbolLocation {
  std::string file;
  int64_t line = 0;
  int64_t column = 0;
  std::string field;      // empty for running text
  std::string character;  // the character's bytes

  /// "file:line:column" (+ " in field 'text'").
  std::string where() const;
};

/// The first character (UTF-8 unit) of a split for which `unknown` is true. User files
/// (Corpus::open_files) are searched record by record; other corpora through their files
/// (split_files), which for a cut single-file corpus is the whole file.
std::optional<SymbolLocation> find_symbol(const Corpus& corpus, std::string_view split,
                                          const std::function<bool(std::string_view)>& unknown);

/// "'é' (U+00E9)", or "byte 0xFF" for a stray byte.
std::string describe_symbol(std::string_view character);

}  // namespace rota::data
