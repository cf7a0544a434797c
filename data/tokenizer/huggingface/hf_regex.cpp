// PCRE2-backed patterns.
#include "data/tokenizer/huggingface/hf_regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "data/tokenizer/huggingface/hf_json.h"
#include "data/tokenizer/huggingface/hf_text.h"

namespace rota::data::hf {

namespace {

constexpr const char* kWordClass = "\\p{Alphabetic}\\p{M}\\p{N}\\p{Pc}";

// Match data for one thread (an ovector of one pair is all find_all reads).
struct MatchData {
  pcre2_match_data* data = pcre2_match_data_create(1, nullptr);
  ~MatchData() { pcre2_match_data_free(data); }
};

}  // namespace

std::string onig_to_pcre2(std::string_view pattern) {
  std::string out;
  bool in_class = false;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      const char e = pattern[i + 1];
      ++i;
      if (e == 's') {
        out += in_class ? "\\s\\x{85}" : "[\\s\\x{85}]";
      } else if (e == 'S' && !in_class) {
        out += "[^\\s\\x{85}]";
      } else if (e == 'w') {
        out += in_class ? std::string(kWordClass) : "[" + std::string(kWordClass) + "]";
      } else if (e == 'W' && !in_class) {
        out += "[^" + std::string(kWordClass) + "]";
      } else {
        out.push_back('\\');
        out.push_back(e);
      }
      continue;
    }
    if (!in_class && c == '[') {
      in_class = true;
      out.push_back(c);
      // A ']' right after '[' or '[^' is a literal.
      if (i + 1 < pattern.size() && pattern[i + 1] == '^') out.push_back(pattern[++i]);
      if (i + 1 < pattern.size() && pattern[i + 1] == ']') out.push_back(pattern[++i]);
      continue;
    }
    if (in_class && c == ']') in_class = false;
    out.push_back(c);
  }
  return out;
}

struct Pattern::Compiled {
  pcre2_code* code = nullptr;
  bool jit = false;
  ~Compiled() { pcre2_code_free(code); }
};

Pattern::Pattern() = default;
Pattern::Pattern(Pattern&&) noexcept = default;
Pattern& Pattern::operator=(Pattern&&) noexcept = default;
Pattern::~Pattern() = default;

Pattern Pattern::regex(std::string_view pattern, const JsonPath& at) {
  Pattern result;
  result.compiled_ = std::make_unique<Compiled>();
  const std::string rewritten = onig_to_pcre2(pattern);
  int error = 0;
  PCRE2_SIZE offset = 0;
  // Oniguruma's Ruby syntax: ^ and $ match at line boundaries.
  result.compiled_->code =
      pcre2_compile(reinterpret_cast<PCRE2_SPTR>(rewritten.data()), rewritten.size(),
                    PCRE2_UTF | PCRE2_UCP | PCRE2_MULTILINE, &error, &offset, nullptr);
  if (result.compiled_->code == nullptr) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof(message));
    fail_at(at, "regex '{}' does not compile (at offset {}): {}", std::string(pattern), offset,
            reinterpret_cast<const char*>(message));
  }
  result.compiled_->jit = pcre2_jit_compile(result.compiled_->code, PCRE2_JIT_COMPLETE) == 0;
  return result;
}

Pattern Pattern::literal(std::string_view text) {
  Pattern result;
  result.literal_ = std::string(text);
  return result;
}

void Pattern::find_all(std::string_view text, std::vector<std::pair<size_t, size_t>>& out) const {
  if (!compiled_) {
    if (literal_.empty()) return;
    for (size_t pos = text.find(literal_); pos != std::string_view::npos;
         pos = text.find(literal_, pos + literal_.size())) {
      out.emplace_back(pos, pos + literal_.size());
    }
    return;
  }
  if (text.empty()) return;  // the reference reports no match in an empty string
  thread_local MatchData match;
  const auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t start = 0;
  bool matched = false;
  size_t last_end = 0;
  while (start <= text.size()) {
    const int rc = compiled_->jit ? pcre2_jit_match(compiled_->code, subject, text.size(), start, 0,
                                                    match.data, nullptr)
                                  : pcre2_match(compiled_->code, subject, text.size(), start,
                                                PCRE2_NO_UTF_CHECK, match.data, nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) return;
    ROTA_CHECK(rc >= 0, "regex: PCRE2 match failed (error {})", rc);
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match.data);
    const size_t begin = ovector[0], end = ovector[1];
    // As Oniguruma's iterator: an empty match right where the previous match ended is skipped
    // by moving on one character.
    if (begin == end && matched && last_end == end) {
      if (start >= text.size()) return;
      start += utf8_length(static_cast<unsigned char>(text[start]));
      continue;
    }
    out.emplace_back(begin, end);
    matched = true;
    last_end = end;
    start = end;
  }
}

}  // namespace rota::data::hf
