// A table of strings rendered as CSV (RFC 4180) or as a GitHub markdown table.
#pragma once

#include <string>
#include <vector>

namespace rota::experiments {

struct TextTable {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;  // each as long as the header
};

/// CSV: fields with a comma, quote or line break are quoted, quotes doubled; lines end in "\n".
std::string to_csv(const TextTable& table);
/// Parses CSV text (RFC 4180: quoted fields may hold commas, doubled quotes and line breaks;
/// "\r\n" or "\n" line ends) into a header and rows. Throws rota::Error for an unterminated
/// quote or a row whose field count differs from the header's, naming the line.
TextTable parse_csv(const std::string& text);
/// Markdown: the first `text_columns` columns left-aligned, the rest (numbers) right-aligned;
/// `|` in a cell is escaped; line breaks become spaces.
std::string to_markdown(const TextTable& table, size_t text_columns = 1);

}  // namespace rota::experiments
