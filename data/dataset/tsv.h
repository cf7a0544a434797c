// Reading tab-separated files (GLUE style) with header detection and columns by name.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace rota::data {

/// Whether the first line of a TSV file is a header.
enum class TsvHeader {
  kDetect,   // a header when it names every required column (see parse_tsv)
  kPresent,  // always a header
  kAbsent,   // never a header
};

/// A parsed TSV file. Fields are split at tabs only (no quoting, as GLUE's readers do).
struct TsvTable {
  std::string source;                // file name, for messages
  std::vector<std::string> columns;  // names (header, given names, or "0", "1", ...)
  bool has_header = false;
  std::vector<std::vector<std::string>> rows;
  std::vector<int64_t> line_numbers;  // 1-based line of each row, for messages

  /// Index of a column by name; a purely numeric name that is not a column name is a 0-based
  /// position ("1" = the second column). Throws rota::Error listing the columns when absent.
  int64_t column(std::string_view name) const;
};

/// Parses TSV text. With TsvHeader::kDetect, the first line is a header when it contains every
/// name in `required` (GLUE: "sentence" and "label"), and it is an error when it contains some
/// but not all of them; purely numeric names ("0", "3") require a column by position and take
/// no part in the detection. kPresent / kAbsent force the decision.
/// Without a header, columns are named `headerless_columns` (whose count must match) or,
/// when that is empty, "0", "1", ... so that columns can be required by position. Every row
/// must have as many fields as there are columns; a trailing "\r" is dropped; a missing final
/// newline is fine.
TsvTable parse_tsv(std::string_view text, const std::vector<std::string>& required,
                   const std::vector<std::string>& headerless_columns = {},
                   std::string source = "<tsv>", TsvHeader header = TsvHeader::kDetect);

/// parse_tsv on the contents of a file.
TsvTable read_tsv(const std::filesystem::path& path, const std::vector<std::string>& required,
                  const std::vector<std::string>& headerless_columns = {},
                  TsvHeader header = TsvHeader::kDetect);

}  // namespace rota::data
