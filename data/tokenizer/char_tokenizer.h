// Character-level tokenizer: one id per character of a vocabulary built from training text.
#pragma once

#include <array>
#include <memory>
#include <vector>

#include "data/tokenizer/string_hash.h"
#include "data/tokenizer/tokenizer.h"

namespace rota::data {

/// A "character" is a UTF-8 code point; a byte that is not part of well-formed UTF-8 counts as
/// a character of its own, so any text splits into characters and joins back byte-exactly.
/// Ids: the special tokens first (0, 1, ... in the order given), then the characters of the
/// training text in code point order (with no special tokens, Tiny Shakespeare gets the
/// familiar 65 ids). A character outside the vocabulary encodes as <unk> when the tokenizer
/// has one and is an error otherwise.
class CharTokenizer final : public Tokenizer {
 public:
  /// Vocabulary = specials + every distinct character of text.
  static std::unique_ptr<CharTokenizer> train(std::string_view text,
                                              const std::vector<SpecialToken>& specials = {});
  static std::unique_ptr<CharTokenizer> load(const std::filesystem::path& dir);

  std::string kind() const override { return "char"; }
  int64_t vocab_size() const override { return static_cast<int64_t>(tokens_.size()); }
  std::vector<int64_t> encode(std::string_view text) const override;
  std::string decode(std::span<const int64_t> ids) const override;
  std::string token_text(int64_t id) const override;
  void save(const std::filesystem::path& dir) const override;

 private:
  CharTokenizer(const std::vector<SpecialToken>& specials, std::vector<std::string> characters);

  std::vector<std::string> tokens_;       // id -> bytes (special tokens as their text)
  std::array<int64_t, 256> single_byte_;  // one-byte characters -> id, -1 if absent
  StringMap<int64_t> multi_byte_;         // longer characters -> id
};

}  // namespace rota::data
