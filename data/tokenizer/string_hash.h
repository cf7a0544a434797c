// Transparent string hashing so unordered maps keyed by std::string accept string_view lookups.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace rota::data {

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view text) const { return std::hash<std::string_view>{}(text); }
};

/// std::unordered_map<std::string, V> with lookups by string_view (no temporary strings).
template <typename V>
using StringMap = std::unordered_map<std::string, V, StringHash, std::equal_to<>>;

}  // namespace rota::data
