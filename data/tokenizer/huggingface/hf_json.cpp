// tokenizer.json value access with path-naming errors.
#include "data/tokenizer/huggingface/hf_json.h"

namespace rota::data::hf {

namespace {

const char* type_name(const json& value) {
  return value.type_name();
}

}  // namespace

const json& member(const json& value, const JsonPath& at, std::string_view name) {
  if (!value.is_object()) fail_at(at, "must be an object, found {}", type_name(value));
  const auto it = value.find(name);
  if (it == value.end()) fail_at(at.key(name), "is missing");
  return *it;
}

bool has(const json& value, std::string_view name) {
  if (!value.is_object()) return false;
  const auto it = value.find(name);
  return it != value.end() && !it->is_null();
}

std::string string_member(const json& value, const JsonPath& at, std::string_view name) {
  const json& item = member(value, at, name);
  if (!item.is_string()) fail_at(at.key(name), "must be a string, found {}", type_name(item));
  return item.get<std::string>();
}

std::string string_or(const json& value, const JsonPath& at, std::string_view name,
                      std::string_view fallback) {
  if (!has(value, name)) return std::string(fallback);
  return string_member(value, at, name);
}

bool bool_or(const json& value, const JsonPath& at, std::string_view name, bool fallback) {
  if (!has(value, name)) return fallback;
  const json& item = value.find(name).value();
  if (!item.is_boolean()) fail_at(at.key(name), "must be true or false, found {}", type_name(item));
  return item.get<bool>();
}

int64_t int_or(const json& value, const JsonPath& at, std::string_view name, int64_t fallback) {
  if (!has(value, name)) return fallback;
  const json& item = value.find(name).value();
  if (!item.is_number_integer())
    fail_at(at.key(name), "must be an integer, found {}", type_name(item));
  return item.get<int64_t>();
}

const json& array_member(const json& value, const JsonPath& at, std::string_view name) {
  const json& item = member(value, at, name);
  if (!item.is_array()) fail_at(at.key(name), "must be an array, found {}", type_name(item));
  return item;
}

std::string component_type(const json& value, const JsonPath& at) {
  return string_member(value, at, "type");
}

void unsupported_type(const JsonPath& at, std::string_view what, std::string_view type,
                      std::string_view supported) {
  fail("{}.type '{}' is not supported as {} (supported: {})", at.where(), type, what, supported);
}

}  // namespace rota::data::hf
