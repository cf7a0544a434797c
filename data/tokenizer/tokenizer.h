// The tokenizer interface: text <-> ids, vocabulary size, special token ids, save/load.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "data/tokenizer/special_tokens.h"

namespace rota::data {

/// File written by Tokenizer::save into its directory (kind, special token ids, options);
/// some kinds write a second file next to it (vocab.txt, spm.model).
inline constexpr const char* kTokenizerConfigFile = "tokenizer.json";

/// Maps text to token ids and back. Implementations: ByteTokenizer, CharTokenizer,
/// WordTokenizer, SentencePieceTokenizer, HuggingFaceTokenizer. All are immutable once built, so
/// one tokenizer can be shared by several datasets and threads.
class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  /// "byte", "char", "word", "sentencepiece" or "huggingface".
  virtual std::string kind() const = 0;
  /// Number of ids; every id is in [0, vocab_size()).
  virtual int64_t vocab_size() const = 0;
  /// Token ids of text. Special tokens are never parsed out of the text, except that the
  /// line-based tokenizers (word, sentencepiece) append <eos> after every line.
  virtual std::vector<int64_t> encode(std::string_view text) const = 0;
  /// Text of ids. Special tokens are rendered as their text ("<mask>"), except <eos> in the
  /// line-based tokenizers, which is rendered as "\n". Throws on an id outside the vocabulary.
  virtual std::string decode(std::span<const int64_t> ids) const = 0;
  /// Human-readable text of one token (a byte is shown as its character or as "<0xNN>").
  virtual std::string token_text(int64_t id) const = 0;
  /// Writes the tokenizer into dir (created if missing) so load_tokenizer(dir) rebuilds an
  /// identical one. Runs and checkpoints carry their tokenizer this way. byte, char and word
  /// tokenizers also write tokenizer.hf.json, a Hugging Face tokenizer.json giving the same ids.
  virtual void save(const std::filesystem::path& dir) const = 0;

  /// Which special tokens this tokenizer has, and their ids.
  const SpecialTokens& specials() const { return specials_; }

 protected:
  /// Throws rota::Error "<who>: token id N outside the vocabulary [0, V)" when out of range.
  void check_id(int64_t id, const char* who) const;

  SpecialTokens specials_;
};

/// Rebuilds a tokenizer saved with Tokenizer::save (Rota's tokenizer.json, or a Hugging Face
/// tokenizer.json, which a HuggingFaceTokenizer saves as is). Throws rota::Error when the
/// directory has no tokenizer.json, or when it is malformed or of an unknown kind or version.
std::unique_ptr<Tokenizer> load_tokenizer(const std::filesystem::path& dir);

}  // namespace rota::data
