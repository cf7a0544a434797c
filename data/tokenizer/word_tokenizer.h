// Word-level tokenizer (WikiText/PTB conventions): whitespace split, <unk>, <eos> per line.
#pragma once

#include <memory>
#include <vector>

#include "data/tokenizer/string_hash.h"
#include "data/tokenizer/tokenizer.h"

namespace rota::data {

/// How the vocabulary is built from the training text.
struct WordVocabOptions {
  /// Special tokens, given ids 0, 1, ... in this order. Must include <unk>; with <eos>, every
  /// line ends with an <eos> token.
  std::vector<SpecialToken> specials = {SpecialToken::kUnk, SpecialToken::kEos};
  /// Words seen fewer times than this in the training text map to <unk>.
  int64_t min_frequency = 1;
  /// Upper bound on the vocabulary size including the special tokens (0 = no bound); the
  /// most frequent words are kept.
  int64_t max_size = 0;
};

/// Text is split into lines at '\n' and lines into words at ASCII whitespace (as Python's
/// str.split does for WikiText); each line gives its words followed by <eos>. A final line
/// without '\n' counts as a line; the empty text gives no tokens. A word spelled like a
/// special token ("<unk>" in WikiText) is that token. Ids: special tokens first, then words
/// by decreasing training frequency, ties in order of first appearance.
/// decode joins words with single spaces and renders <eos> as "\n", so
/// decode(encode(x)) == x with whitespace normalised and unknown words as <unk>.
class WordTokenizer final : public Tokenizer {
 public:
  static std::unique_ptr<WordTokenizer> train(std::string_view text,
                                              const WordVocabOptions& options = {});
  static std::unique_ptr<WordTokenizer> load(const std::filesystem::path& dir);

  std::string kind() const override { return "word"; }
  int64_t vocab_size() const override { return static_cast<int64_t>(tokens_.size()); }
  std::vector<int64_t> encode(std::string_view text) const override;
  std::string decode(std::span<const int64_t> ids) const override;
  std::string token_text(int64_t id) const override;
  /// Writes tokenizer.json, vocab.txt (one token per line, in id order) and, when every word
  /// is valid UTF-8 (JSON's encoding), tokenizer.hf.json (the same tokenizer for Hugging Face
  /// tokenizers; see docs/data.md).
  void save(const std::filesystem::path& dir) const override;

  /// The id of a word, or -1 when it is not in the vocabulary.
  int64_t find(std::string_view word) const;

 private:
  explicit WordTokenizer(std::vector<std::string> tokens);

  std::vector<std::string> tokens_;  // id -> word (special tokens as their text)
  StringMap<int64_t> ids_;
};

/// Calls on_word(word) for every word and on_line_end() after every line of text, with the
/// word tokenizer's splitting rules.
template <typename OnWord, typename OnLineEnd>
void split_lines_and_words(std::string_view text, OnWord&& on_word, OnLineEnd&& on_line_end) {
  const auto is_space = [](char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
  };
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    size_t i = pos;
    while (i < end) {
      while (i < end && is_space(text[i])) ++i;
      const size_t start = i;
      while (i < end && !is_space(text[i])) ++i;
      if (i > start) on_word(text.substr(start, i - start));
    }
    on_line_end();
    pos = end + 1;
  }
}

}  // namespace rota::data
