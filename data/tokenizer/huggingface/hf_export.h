// Rota's own tokenizers written as Hugging Face tokenizer.json files that the reference encodes
// to the same ids (docs/data.md, "Export").
#pragma once

#include <string>
#include <vector>

#include "data/tokenizer/special_tokens.h"

namespace rota::data::hf {

/// File written beside Rota's tokenizer.json: the reference refuses unknown top-level keys, so
/// Rota's own file cannot double as a Hugging Face one.
inline constexpr const char* kHuggingFaceExportFile = "tokenizer.hf.json";

/// Byte tokenizer: BPE without merges over the 256 byte-level characters (ids = bytes), the
/// special tokens after them; ByteLevel pre-tokenizer (no prefix space, no regex) and decoder.
std::string export_byte_tokenizer(const std::vector<SpecialToken>& specials);
/// Char tokenizer: BPE without merges whose vocabulary is the characters (id order), <unk>
/// for unknown ones, Fuse decoder. tokens: id -> bytes; a stray byte gets a placeholder.
std::string export_char_tokenizer(const std::vector<std::string>& tokens,
                                  const SpecialTokens& specials);
/// Word tokenizer: WordLevel over the words; '\n' (or the end of a last line without one)
/// becomes " <eos> " by a Replace normalizer; split at ASCII whitespace.
std::string export_word_tokenizer(const std::vector<std::string>& tokens,
                                  const SpecialTokens& specials);

}  // namespace rota::data::hf
