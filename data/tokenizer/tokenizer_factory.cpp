// Tokenizer construction from a TokenizerSpec.
#include "data/tokenizer/tokenizer_factory.h"

#include "data/tokenizer/byte_tokenizer.h"
#include "data/tokenizer/char_tokenizer.h"
#include "data/tokenizer/sentencepiece_tokenizer.h"
#include "data/tokenizer/word_tokenizer.h"
#include "framework/base/error.h"

namespace rota::data {

TokenizerKind parse_tokenizer_kind(std::string_view name) {
  if (name == "byte") return TokenizerKind::kByte;
  if (name == "char") return TokenizerKind::kChar;
  if (name == "word") return TokenizerKind::kWord;
  if (name == "bpe") return TokenizerKind::kBpe;
  if (name == "unigram") return TokenizerKind::kUnigram;
  fail("tokenizer: unknown kind '{}' (known: byte, char, word, bpe, unigram)", name);
}

const char* tokenizer_kind_name(TokenizerKind kind) {
  switch (kind) {
    case TokenizerKind::kByte:
      return "byte";
    case TokenizerKind::kChar:
      return "char";
    case TokenizerKind::kWord:
      return "word";
    case TokenizerKind::kBpe:
      return "bpe";
    case TokenizerKind::kUnigram:
      return "unigram";
  }
  return "?";
}

std::vector<SpecialToken> default_special_tokens(TokenizerKind kind) {
  if (kind == TokenizerKind::kByte || kind == TokenizerKind::kChar) return {};
  return {SpecialToken::kUnk, SpecialToken::kEos};
}

std::unique_ptr<Tokenizer> build_tokenizer(const TokenizerSpec& spec,
                                           std::string_view training_text) {
  const std::vector<SpecialToken> specials =
      spec.specials.value_or(default_special_tokens(spec.kind));
  switch (spec.kind) {
    case TokenizerKind::kByte:
      return std::make_unique<ByteTokenizer>(specials);
    case TokenizerKind::kChar:
      return CharTokenizer::train(training_text, specials);
    case TokenizerKind::kWord: {
      WordVocabOptions options;
      options.specials = specials;
      options.min_frequency = spec.min_frequency;
      options.max_size = spec.vocab_size;
      return WordTokenizer::train(training_text, options);
    }
    case TokenizerKind::kBpe:
    case TokenizerKind::kUnigram: {
      ROTA_CHECK(spec.vocab_size > 0, "tokenizer: {} needs a vocab_size",
                 tokenizer_kind_name(spec.kind));
      SentencePieceOptions options;
      options.model = spec.kind == TokenizerKind::kBpe ? SentencePieceModel::kBpe
                                                       : SentencePieceModel::kUnigram;
      options.vocab_size = spec.vocab_size;
      options.specials = specials;
      options.character_coverage = spec.character_coverage;
      options.byte_fallback = spec.byte_fallback;
      options.normalization = spec.normalization;
      options.max_sentences = spec.max_sentences;
      return SentencePieceTokenizer::train(training_text, options);
    }
  }
  fail("tokenizer: unhandled kind");
}

}  // namespace rota::data
