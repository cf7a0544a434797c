// Parsing JSON Lines records with nlohmann-json.
#include "data/source/jsonl.h"

#include <nlohmann/json.hpp>

#include "framework/base/error.h"

namespace rota::data {

namespace {

using nlohmann::json;

const json* find_field(const json& object, const std::string& name) {
  if (auto it = object.find(name); it != object.end()) return &*it;
  const json* at = &object;
  size_t pos = 0;
  while (true) {
    const size_t dot = name.find('.', pos);
    const std::string key =
        name.substr(pos, dot == std::string::npos ? std::string::npos : dot - pos);
    if (!at->is_object()) return nullptr;
    const auto it = at->find(key);
    if (it == at->end()) return nullptr;
    at = &*it;
    if (dot == std::string::npos) return at;
    pos = dot + 1;
  }
}

std::string field_value(const json& object, const std::string& name, bool is_label,
                        std::string_view file, int64_t line) {
  const json* value = find_field(object, name);
  if (value == nullptr) {
    std::string keys;
    for (const auto& [key, unused] : object.items()) keys += (keys.empty() ? "" : ", ") + key;
    fail("data: {}:{}: the record has no field '{}' (its keys: {})", file, line, name,
         keys.empty() ? "none" : keys);
  }
  if (value->is_string()) return value->get<std::string>();
  if (is_label && (value->is_number_integer() || value->is_number_unsigned())) return value->dump();
  fail("data: {}:{}: field '{}' is {} {}, not a string{}", file, line, name,
       value->is_object() || value->is_array() ? "an" : "a", value->type_name(),
       is_label ? " or an integer" : "");
}

}  // namespace

std::optional<TextRecord> parse_jsonl_line(std::string_view line, const RecordFields& fields,
                                           std::string_view file, int64_t line_number) {
  if (line.find_first_not_of(" \t\r\n") == std::string_view::npos) return std::nullopt;
  json object;
  try {
    object = json::parse(line);
  } catch (const json::exception& e) {
    fail("data: {}:{}: not valid JSON ({}); a JSON Lines file holds one JSON object per line", file,
         line_number, library_detail(e));
  }
  ROTA_CHECK(object.is_object(), "data: {}:{}: the line is a JSON {}, not an object", file,
             line_number, object.type_name());
  TextRecord record;
  record.file = std::string(file);
  record.line = line_number;
  record.text = field_value(object, fields.text, false, file, line_number);
  if (!fields.text_pair.empty()) {
    record.text_pair = field_value(object, fields.text_pair, false, file, line_number);
  }
  if (!fields.label.empty())
    record.label = field_value(object, fields.label, true, file, line_number);
  return record;
}

}  // namespace rota::data
