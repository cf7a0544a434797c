// CSV and markdown rendering of a TextTable (see text_table.h).
#include "experiments/report/text_table.h"

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

}  // namespace rota::experiments
