// CSV and markdown rendering of a TextTable (see text_table.h).
#include "experiments/report/text_table.h"

#include <fmt/format.h>

#include "framework/base/error.h"

namespace rota::experiments {

namespace {

std::string csv_field(const std::string& field) {
  if (field.find_first_of(",\"\n\r") == std::string::npos) return field;
  std::string quoted = "\"";
  for (char c : field) {
    quoted += c;
    if (c == '"') quoted += '"';
  }
  return quoted + "\"";
}

std::string markdown_cell(const std::string& cell) {
  std::string out;
  for (char c : cell) {
    if (c == '|') {
      out += "\\|";
    } else if (c == '\n' || c == '\r') {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

std::string csv_line(const std::vector<std::string>& fields) {
  std::string line;
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i > 0) line += ',';
    line += csv_field(fields[i]);
  }
  return line + "\n";
}

std::string markdown_line(const std::vector<std::string>& cells) {
  std::string line = "|";
  for (const std::string& cell : cells) {
    line += ' ';
    line += markdown_cell(cell);
    line += " |";
  }
  return line + "\n";
}

}  // namespace

std::string to_csv(const TextTable& table) {
  std::string text = csv_line(table.header);
  for (const auto& row : table.rows) text += csv_line(row);
  return text;
}

std::string to_markdown(const TextTable& table, size_t text_columns) {
  std::string text = markdown_line(table.header);
  text += "|";
  for (size_t i = 0; i < table.header.size(); ++i) text += i < text_columns ? "---|" : "---:|";
  text += "\n";
  for (const auto& row : table.rows) text += markdown_line(row);
  return text;
}

TextTable parse_csv(const std::string& text) {
  std::vector<std::vector<std::string>> records;
  std::vector<std::string> record;
  std::string field;
  bool quoted = false, field_started = false;
  int line = 1, record_line = 1;
  auto end_record = [&] {
    record.push_back(std::move(field));
    field.clear();
    records.push_back(std::move(record));
    record.clear();
    field_started = false;
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        if (c == '\n') ++line;
        field += c;
      }
      continue;
    }
    if (c == '"' && field.empty()) {
      quoted = field_started = true;
    } else if (c == ',') {
      record.push_back(std::move(field));
      field.clear();
      field_started = true;
    } else if (c == '\n' || c == '\r') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      end_record();
      record_line = ++line;
    } else {
      field += c;
      field_started = true;
    }
  }
  if (quoted) throw Error(fmt::format("CSV line {}: a quoted field is not closed", record_line));
  if (field_started || !field.empty() || !record.empty()) end_record();
  TextTable table;
  if (records.empty()) return table;
  table.header = std::move(records.front());
  for (size_t r = 1; r < records.size(); ++r) {
    if (records[r].size() != table.header.size()) {
      throw Error(fmt::format("CSV record {}: {} fields, the header has {}", r + 1,
                              records[r].size(), table.header.size()));
    }
    table.rows.push_back(std::move(records[r]));
  }
  return table;
}

}  // namespace rota::experiments
