// tokenizer.json pre-tokenizers: split normalised text into the pieces the model encodes.
#pragma once

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "data/tokenizer/huggingface/hf_json.h"

namespace rota::data::hf {

/// A piece of normalised text. at_start: it begins at offset 0 of the encoded input (what
/// Metaspace's prepend_scheme "first" asks).
struct Piece {
  std::string text;
  bool at_start = false;
};

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  /// Replaces pieces by their splits (empty pieces are dropped).
  virtual void apply(std::vector<Piece>& pieces) const = 0;
};

/// Supported: ByteLevel Split Whitespace WhitespaceSplit BertPreTokenizer Metaspace
/// Punctuation Digits Sequence. Throws rota::Error naming the path for anything else.
std::unique_ptr<PreTokenizer> parse_pre_tokenizer(const json& value, const JsonPath& at);

inline constexpr const char* kSupportedPreTokenizers =
    "ByteLevel, Split, Whitespace, WhitespaceSplit, BertPreTokenizer, Metaspace, Punctuation, "
    "Digits, Sequence";

/// GPT-2's pre-tokenization regex (ByteLevel with use_regex).
inline constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

/// The byte-level alphabet: byte b as the UTF-8 of its printable stand-in (GPT-2's table).
const std::array<std::string, 256>& byte_level_chars();

}  // namespace rota::data::hf
