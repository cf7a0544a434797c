// Added tokens of tokenizer.json: found in the text before normalisation (or after it, for
// "normalized" ones) with single_word, lstrip and rstrip as the reference applies them.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "data/tokenizer/huggingface/hf_json.h"

namespace rota::data::hf {

struct AddedToken {
  int64_t id = 0;
  std::string content;
  bool single_word = false, lstrip = false, rstrip = false, normalized = true, special = false;
};

/// A span of text: either an added token (id >= 0) or text for the normalizer/model (id -1).
struct Span {
  size_t begin, end;
  int64_t id;
};

/// Leftmost-longest matching of a set of strings.
class AddedTokenMatcher {
 public:
  void add(std::string pattern, size_t token_index);
  /// Indexes the patterns added so far (call once after the last add).
  void build();
  bool empty() const { return patterns_.empty(); }
  /// Splits text into spans (tokens and the text between them), as the reference's
  /// split_with_indices does.
  void split(std::string_view text, const std::vector<AddedToken>& tokens,
             std::vector<Span>& out) const;

 private:
  struct Entry {
    std::string text;
    size_t token;
  };
  std::vector<Entry> patterns_;                    // longest first
  std::array<std::vector<size_t>, 256> by_first_;  // first byte -> pattern indices, longest first
};

class AddedTokens {
 public:
  std::vector<AddedToken> tokens;
  AddedTokenMatcher raw;         // tokens with normalized = false
  AddedTokenMatcher normalized;  // the others, by their normalised content
};

}  // namespace rota::data::hf
