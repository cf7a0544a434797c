// SentencePiece's precompiled_charsmap (a darts-clone double array over UTF-8 keys and a blob
// of NUL-terminated replacement strings), applied as Hugging Face's Precompiled normalizer.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rota::data::hf {

class PrecompiledCharsmap {
 public:
  /// bytes: little-endian u32 trie size in bytes, the trie's u32 units, the string blob.
  /// Throws rota::Error (prefixed with `where`) when the layout is inconsistent.
  PrecompiledCharsmap(std::string_view bytes, const std::string& where);

  /// The replacement of the shortest key that is a prefix of chunk, if any (Hugging Face's
  /// rule: the whole chunk is replaced by it).
  std::optional<std::string_view> transform(std::string_view chunk) const;
  /// Hugging Face's Precompiled normalisation of text: graphemes shorter than 6 bytes are
  /// looked up whole, then each of their characters.
  std::string normalize(std::string_view text) const;

 private:
  std::vector<uint32_t> units_;
  std::string blob_;
};

/// Standard base64 (with or without padding); throws rota::Error on other characters.
std::string base64_decode(std::string_view text, const std::string& where);
std::string base64_encode(std::string_view bytes);

}  // namespace rota::data::hf
