// Streaming generated tokens as text: each new id's text as a whole-sequence decode gives it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/tokenizer/tokenizer.h"

namespace rota::app {

/// Decoding ids one at a time loses what a tokenizer puts *between* tokens (a word
/// vocabulary's spaces, SentencePiece's leading "▁" of a piece) and can cut a UTF-8 character
/// that spans byte tokens. TextStream decodes the whole sequence so far and hands out only
/// what it adds to the text already printed, so the printed text always equals one decode of
/// the whole sequence (holding back a trailing U+FFFD until the character completes).
class TextStream {
 public:
  TextStream(const data::Tokenizer& tokenizer, std::vector<int64_t> prompt);
  /// The prompt's text (call once, first).
  std::string start();
  /// Appends id; returns the text to print now (possibly empty).
  std::string push(int64_t id);
  /// The text still held back at the end of generation.
  std::string finish();

 private:
  /// What decode(ids) adds to printed_, holding back a trailing replacement character unless
  /// `final`.
  std::string advance(bool final);

  const data::Tokenizer& tokenizer_;
  std::vector<int64_t> ids_;
  std::string printed_;
};

}  // namespace rota::app
