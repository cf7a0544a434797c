// TSV parsing.
#include "data/dataset/tsv.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "framework/base/error.h"
#include "framework/base/file_io.h"

namespace rota::data {

namespace {

std::vector<std::string> split_fields(std::string_view line) {
  std::vector<std::string> fields;
  size_t pos = 0;
  while (true) {
    const size_t tab = line.find('\t', pos);
    if (tab == std::string_view::npos) {
      fields.emplace_back(line.substr(pos));
      return fields;
    }
    fields.emplace_back(line.substr(pos, tab - pos));
    pos = tab + 1;
  }
}

bool contains(const std::vector<std::string>& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// "0", "1", ...: a column required by position, which never makes a line a header.
bool is_positional(std::string_view name) {
  return !name.empty() && name.find_first_not_of("0123456789") == std::string_view::npos;
}

}  // namespace

int64_t TsvTable::column(std::string_view name) const {
  const auto it = std::find(columns.begin(), columns.end(), name);
  if (it == columns.end() && is_positional(name) && name.size() < 10) {
    const int64_t index = std::stoll(std::string(name));
    if (index < static_cast<int64_t>(columns.size())) return index;
  }
  ROTA_CHECK(it != columns.end(), "tsv: {} has no column '{}' (columns: {})", source, name,
             fmt::join(columns, ", "));
  return it - columns.begin();
}

TsvTable parse_tsv(std::string_view text, const std::vector<std::string>& required,
                   const std::vector<std::string>& headerless_columns, std::string source,
                   TsvHeader header) {
  TsvTable table;
  table.source = std::move(source);
  std::vector<std::pair<std::string_view, int64_t>> lines;
  int64_t line_number = 0;
  for (size_t pos = 0; pos < text.size();) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.emplace_back(line, ++line_number);
    pos = end + 1;
  }
  ROTA_CHECK(!lines.empty(), "tsv: {} is empty", table.source);

  const std::vector<std::string> first = split_fields(lines.front().first);
  std::vector<std::string> named;  // required columns that a header would name
  for (const std::string& name : required) {
    if (!is_positional(name)) named.push_back(name);
  }
  const bool all_present = std::all_of(
      named.begin(), named.end(), [&](const std::string& name) { return contains(first, name); });
  const auto present = std::find_if(named.begin(), named.end(),
                                    [&](const std::string& name) { return contains(first, name); });
  size_t first_row = 0;
  if (header == TsvHeader::kPresent ||
      (header == TsvHeader::kDetect && !named.empty() && all_present)) {
    table.has_header = true;
    table.columns = first;
    first_row = 1;
  } else {
    if (header == TsvHeader::kDetect && present != named.end()) {
      const auto missing = std::find_if(named.begin(), named.end(), [&](const std::string& name) {
        return !contains(first, name);
      });
      fail("tsv: the header of {} ({}) has column '{}' but not '{}'", table.source,
           fmt::join(first, ", "), *present, *missing);
    }
    if (!headerless_columns.empty()) {
      ROTA_CHECK(headerless_columns.size() == first.size(),
                 "tsv: {} has {} fields per row, but {} column names were given ({})", table.source,
                 first.size(), headerless_columns.size(), fmt::join(headerless_columns, ", "));
      table.columns = headerless_columns;
    } else {
      for (size_t i = 0; i < first.size(); ++i) table.columns.push_back(std::to_string(i));
    }
  }
  for (const std::string& name : required) table.column(name);  // clear error if absent

  for (size_t i = first_row; i < lines.size(); ++i) {
    std::vector<std::string> fields = split_fields(lines[i].first);
    ROTA_CHECK(fields.size() == table.columns.size(), "tsv: {}:{}: {} fields, expected {} ({})",
               table.source, lines[i].second, fields.size(), table.columns.size(),
               fmt::join(table.columns, ", "));
    table.rows.push_back(std::move(fields));
    table.line_numbers.push_back(lines[i].second);
  }
  return table;
}

TsvTable read_tsv(const std::filesystem::path& path, const std::vector<std::string>& required,
                  const std::vector<std::string>& headerless_columns, TsvHeader header) {
  return parse_tsv(read_file(path), required, headerless_columns, path.string(), header);
}

}  // namespace rota::data
