// Unicode helpers for the Hugging Face pipeline: UTF-8 code points, character classes as Rust
// and Hugging Face define them, normalisation forms, per-character lowercase, graphemes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace rota::data::hf {

/// The code point at text[pos] (text must be valid UTF-8); advances pos past it.
char32_t next_code_point(std::string_view text, size_t& pos);
void append_utf8(std::string& out, char32_t c);
/// Byte length of the UTF-8 sequence starting with lead byte b (valid UTF-8 assumed).
inline size_t utf8_length(unsigned char b) {
  return b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
}
/// text with every byte that is not part of well-formed UTF-8 replaced by U+FFFD (what a
/// UTF-8 decoder hands the reference implementation).
std::string to_valid_utf8(std::string_view text);
/// Rust's from_utf8_lossy: invalid sequences (maximal subparts) become U+FFFD.
std::string utf8_lossy(std::string_view bytes);

bool is_whitespace(char32_t c);    // Unicode White_Space (Rust char::is_whitespace)
bool is_alphabetic(char32_t c);    // Unicode Alphabetic
bool is_numeric(char32_t c);       // General_Category Nd, Nl, No (Rust char::is_numeric)
bool is_alphanumeric(char32_t c);  // alphabetic or numeric (Rust char::is_alphanumeric)
bool is_word_char(char32_t c);     // regex \w: Alphabetic, M, Nd, Pc, Join_Control
bool is_mark(char32_t c);          // General_Category M (Mn, Mc, Me)
/// Hugging Face's punctuation test (BertPreTokenizer, Punctuation): ASCII punctuation or
/// General_Category P*.
bool is_punctuation(char32_t c);
/// BertNormalizer's control test: Cc, Cf, Co (but not \t \n \r; unassigned code points are
/// kept, as measured against the reference).
bool is_bert_control(char32_t c);
/// BertNormalizer's whitespace test: \t \n \r or White_Space.
bool is_bert_whitespace(char32_t c);
/// BertNormalizer's CJK ideograph ranges.
bool is_chinese_char(char32_t c);

enum class NormalForm { kNfc, kNfd, kNfkc, kNfkd };
std::string normalize(std::string_view text, NormalForm form);
/// Each code point replaced by its full lowercase mapping without context (Rust
/// char::to_lowercase: U+0130 becomes "i\u0307", Σ always σ).
std::string lowercase(std::string_view text);
/// Byte offsets where extended grapheme clusters start, plus text.size() at the end.
std::vector<size_t> grapheme_boundaries(std::string_view text);

}  // namespace rota::data::hf
