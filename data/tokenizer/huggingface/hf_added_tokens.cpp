// Leftmost-longest matching of added tokens and the single_word / lstrip / rstrip rules.
#include "data/tokenizer/huggingface/hf_added_tokens.h"

#include <algorithm>

#include "data/tokenizer/huggingface/hf_text.h"

namespace rota::data::hf {

namespace {

// The last character of text[0, end) is a regex \w character.
bool ends_with_word(std::string_view text, size_t end) {
  if (end == 0) return false;
  size_t start = end - 1;
  while (start > 0 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
  size_t pos = start;
  return is_word_char(next_code_point(text, pos));
}

bool starts_with_word(std::string_view text, size_t begin) {
  if (begin >= text.size()) return false;
  return is_word_char(next_code_point(text, begin));
}

// Start of the whitespace run that ends at `end`.
size_t whitespace_run_start(std::string_view text, size_t end) {
  while (end > 0) {
    size_t start = end - 1;
    while (start > 0 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
    size_t pos = start;
    if (!is_whitespace(next_code_point(text, pos))) break;
    end = start;
  }
  return end;
}

size_t whitespace_run_end(std::string_view text, size_t begin) {
  while (begin < text.size()) {
    size_t pos = begin;
    if (!is_whitespace(next_code_point(text, pos))) break;
    begin = pos;
  }
  return begin;
}

}  // namespace

void AddedTokenMatcher::add(std::string pattern, size_t token_index) {
  if (pattern.empty()) return;
  patterns_.push_back({std::move(pattern), token_index});
}

void AddedTokenMatcher::build() {
  std::stable_sort(patterns_.begin(), patterns_.end(),
                   [](const Entry& a, const Entry& b) { return a.text.size() > b.text.size(); });
  for (auto& list : by_first_) list.clear();
  for (size_t i = 0; i < patterns_.size(); ++i) {
    by_first_[static_cast<unsigned char>(patterns_[i].text[0])].push_back(i);
  }
}

void AddedTokenMatcher::split(std::string_view text, const std::vector<AddedToken>& tokens,
                              std::vector<Span>& out) const {
  size_t done = 0;  // text before this offset is in out
  size_t pos = 0;
  while (pos < text.size()) {
    const auto& candidates = by_first_[static_cast<unsigned char>(text[pos])];
    const Entry* found = nullptr;
    for (size_t index : candidates) {
      const Entry& entry = patterns_[index];
      if (text.compare(pos, entry.text.size(), entry.text) == 0) {
        found = &entry;
        break;
      }
    }
    if (found == nullptr) {
      ++pos;
      continue;
    }
    const AddedToken& token = tokens[found->token];
    size_t start = pos, stop = pos + found->text.size();
    pos = stop;
    if (token.single_word && (ends_with_word(text, start) || starts_with_word(text, stop))) {
      continue;
    }
    if (token.lstrip) start = std::max(whitespace_run_start(text, start), done);
    if (token.rstrip) stop = whitespace_run_end(text, stop);
    if (done < start) out.push_back({done, start, -1});
    out.push_back({start, stop, token.id});
    done = stop;
    pos = std::max(pos, stop);
  }
  if (done < text.size()) out.push_back({done, text.size(), -1});
}

}  // namespace rota::data::hf
