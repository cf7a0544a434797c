// Reading tokenizer.json values with errors that name the file and the JSON path.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "framework/base/error.h"

namespace rota::data::hf {

using nlohmann::json;

/// Where a value sits: the file's name and the JSON path ("pre_tokenizer.pretokenizers[1]").
struct JsonPath {
  std::string file;
  std::string path;

  JsonPath key(std::string_view name) const {
    return {file, path.empty() ? std::string(name) : path + "." + std::string(name)};
  }
  JsonPath index(size_t i) const { return {file, path + "[" + std::to_string(i) + "]"}; }
  /// "<file>: <path>" for messages.
  std::string where() const { return path.empty() ? file : file + ": " + path; }
};

/// Throws rota::Error "<file>: <path> <message>".
template <typename... Args>
[[noreturn]] void fail_at(const JsonPath& at, fmt::format_string<Args...> format, Args&&... args) {
  fail("{} {}", at.where(), fmt::format(format, std::forward<Args>(args)...));
}

/// The object member `name`; throws when value is not an object or has no such member.
const json& member(const json& value, const JsonPath& at, std::string_view name);
/// True when the member exists and is not null.
bool has(const json& value, std::string_view name);
std::string string_member(const json& value, const JsonPath& at, std::string_view name);
/// The member as a string, or fallback when absent or null.
std::string string_or(const json& value, const JsonPath& at, std::string_view name,
                      std::string_view fallback);
bool bool_or(const json& value, const JsonPath& at, std::string_view name, bool fallback);
int64_t int_or(const json& value, const JsonPath& at, std::string_view name, int64_t fallback);
/// The array member `name` (throws when absent or not an array).
const json& array_member(const json& value, const JsonPath& at, std::string_view name);
/// The "type" member of a component (throws when absent).
std::string component_type(const json& value, const JsonPath& at);
/// Throws "<where>.type '<type>' is not supported (supported: <list>)".
[[noreturn]] void unsupported_type(const JsonPath& at, std::string_view what, std::string_view type,
                                   std::string_view supported);

}  // namespace rota::data::hf
