// Patterns of tokenizer.json (Oniguruma syntax in the reference) matched with PCRE2 (UTF, UCP,
// JIT), or literal strings.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rota::data::hf {

struct JsonPath;

/// A compiled pattern. `\s`, `\S` and `\w`, `\W` are rewritten to Oniguruma's Unicode meaning
/// (White_Space incl. U+0085; Alphabetic + marks + numbers + connector punctuation, no joiners,
/// as measured against the reference).
class Pattern {
 public:
  /// Regex pattern; throws rota::Error naming `at` when PCRE2 rejects it.
  static Pattern regex(std::string_view pattern, const JsonPath& at);
  static Pattern literal(std::string_view text);
  Pattern(Pattern&&) noexcept;
  Pattern& operator=(Pattern&&) noexcept;
  ~Pattern();

  /// Appends the [start, end) byte ranges of the non-overlapping matches in text (valid
  /// UTF-8), leftmost first, as the reference finds them: empty matches count, except one
  /// right where the previous match ended; an empty text has no matches.
  void find_all(std::string_view text, std::vector<std::pair<size_t, size_t>>& out) const;

 private:
  Pattern();
  struct Compiled;
  std::string literal_;
  std::unique_ptr<Compiled> compiled_;
};

/// The pattern rewritten for PCRE2 (exposed for tests).
std::string onig_to_pcre2(std::string_view pattern);

}  // namespace rota::data::hf
