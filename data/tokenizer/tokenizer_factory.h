// Building a tokenizer of a given kind from the training split (what a recipe asks for).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "data/tokenizer/tokenizer.h"

namespace rota::data {

enum class TokenizerKind { kByte, kChar, kWord, kBpe, kUnigram };

/// "byte", "char", "word", "bpe", "unigram"; throws rota::Error listing them otherwise.
TokenizerKind parse_tokenizer_kind(std::string_view name);
const char* tokenizer_kind_name(TokenizerKind kind);

/// Plain options for build_tokenizer (the recipe's data.tokenizer section maps onto this).
struct TokenizerSpec {
  TokenizerKind kind = TokenizerKind::kChar;
  /// Special tokens in id order; nullopt = default_special_tokens(kind).
  std::optional<std::vector<SpecialToken>> specials;
  /// bpe/unigram: the exact vocabulary size (required). word: an upper bound including the
  /// special tokens (0 = none). byte/char: ignored (the size follows from the text).
  int64_t vocab_size = 0;
  /// word: minimum training frequency of a vocabulary word.
  int64_t min_frequency = 1;
  /// bpe/unigram: see SentencePieceOptions.
  double character_coverage = 1.0;
  bool byte_fallback = false;
  std::string normalization = "nmt_nfkc";
  int64_t max_sentences = 0;
};

/// byte, char: none. word, bpe, unigram: <unk>, <eos>. Masked LM and classification recipes
/// add <pad>, <mask>, <cls> (and <sep> for sentence pairs).
std::vector<SpecialToken> default_special_tokens(TokenizerKind kind);

/// Builds (trains, for char/word/bpe/unigram) a tokenizer from the training text.
std::unique_ptr<Tokenizer> build_tokenizer(const TokenizerSpec& spec,
                                           std::string_view training_text);

}  // namespace rota::data
