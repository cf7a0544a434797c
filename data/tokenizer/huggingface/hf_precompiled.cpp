// Darts-clone common prefix search and the Precompiled normalisation.
#include "data/tokenizer/huggingface/hf_precompiled.h"

#include <cstring>

#include "data/tokenizer/huggingface/hf_text.h"
#include "framework/base/error.h"

namespace rota::data::hf {

namespace {

// Darts-clone unit layout.
bool has_leaf(uint32_t unit) {
  return ((unit >> 8) & 1) != 0;
}
uint32_t value_of(uint32_t unit) {
  return unit & ((1u << 31) - 1);
}
uint32_t label_of(uint32_t unit) {
  return unit & ((1u << 31) | 0xFF);
}
uint32_t offset_of(uint32_t unit) {
  return (unit >> 10) << ((unit & (1u << 9)) >> 6);
}

int base64_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

}  // namespace

std::string base64_decode(std::string_view text, const std::string& where) {
  std::string out;
  out.reserve(text.size() * 3 / 4);
  uint32_t buffer = 0;
  int bits = 0;
  for (char c : text) {
    if (c == '=') break;
    const int v = base64_value(c);
    ROTA_CHECK(v >= 0, "{}: invalid base64 character '{}'", where, c);
    buffer = (buffer << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((buffer >> bits) & 0xFF));
    }
  }
  return out;
}

std::string base64_encode(std::string_view bytes) {
  static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const uint32_t v = (static_cast<unsigned char>(bytes[i]) << 16) |
                       (static_cast<unsigned char>(bytes[i + 1]) << 8) |
                       static_cast<unsigned char>(bytes[i + 2]);
    for (int s = 18; s >= 0; s -= 6) out.push_back(kAlphabet[(v >> s) & 63]);
  }
  if (i < bytes.size()) {
    uint32_t v = static_cast<unsigned char>(bytes[i]) << 16;
    if (i + 1 < bytes.size()) v |= static_cast<unsigned char>(bytes[i + 1]) << 8;
    out.push_back(kAlphabet[(v >> 18) & 63]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(i + 1 < bytes.size() ? kAlphabet[(v >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

PrecompiledCharsmap::PrecompiledCharsmap(std::string_view bytes, const std::string& where) {
  if (bytes.empty()) return;  // no map: the identity
  ROTA_CHECK(bytes.size() >= 4, "{}: precompiled_charsmap is {} bytes, too short", where,
             bytes.size());
  uint32_t trie_size = 0;
  for (int i = 3; i >= 0; --i) trie_size = (trie_size << 8) | static_cast<unsigned char>(bytes[i]);
  ROTA_CHECK(trie_size % 4 == 0 && 4 + static_cast<size_t>(trie_size) <= bytes.size(),
             "{}: precompiled_charsmap declares a trie of {} bytes in {} bytes", where, trie_size,
             bytes.size());
  units_.resize(trie_size / 4);
  std::memcpy(units_.data(), bytes.data() + 4, trie_size);
  blob_ = std::string(bytes.substr(4 + trie_size));
}

std::optional<std::string_view> PrecompiledCharsmap::transform(std::string_view chunk) const {
  if (units_.empty()) return std::nullopt;
  size_t node = offset_of(units_[0]);
  for (char ch : chunk) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == 0) break;
    node ^= c;
    if (node >= units_.size()) return std::nullopt;
    const uint32_t unit = units_[node];
    if (label_of(unit) != c) return std::nullopt;
    node ^= offset_of(unit);
    if (node >= units_.size()) return std::nullopt;
    if (has_leaf(unit)) {
      const size_t index = value_of(units_[node]);
      if (index >= blob_.size()) return std::string_view();
      const size_t end = blob_.find('\0', index);
      return std::string_view(blob_).substr(
          index, end == std::string::npos ? std::string::npos : end - index);
    }
  }
  return std::nullopt;
}

std::string PrecompiledCharsmap::normalize(std::string_view text) const {
  if (units_.empty()) return std::string(text);
  std::string out;
  out.reserve(text.size());
  const std::vector<size_t> bounds = grapheme_boundaries(text);
  for (size_t g = 0; g + 1 < bounds.size(); ++g) {
    const std::string_view grapheme = text.substr(bounds[g], bounds[g + 1] - bounds[g]);
    if (grapheme.size() < 6) {
      if (const auto replaced = transform(grapheme)) {
        out += *replaced;
        continue;
      }
    }
    for (size_t pos = 0; pos < grapheme.size();) {
      const size_t length = utf8_length(static_cast<unsigned char>(grapheme[pos]));
      const std::string_view character = grapheme.substr(pos, length);
      if (const auto replaced = transform(character)) {
        out += *replaced;
      } else {
        out += character;
      }
      pos += length;
    }
  }
  return out;
}

}  // namespace rota::data::hf
