// Unicode helpers on top of ICU.
#include "data/tokenizer/huggingface/hf_text.h"

#include <memory>
#include <mutex>

#include <unicode/brkiter.h>
#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>
#include <unicode/utext.h>

#include "data/util/utf8.h"
#include "framework/base/error.h"

namespace rota::data::hf {

char32_t next_code_point(std::string_view text, size_t& pos) {
  const auto b = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = b(pos);
  char32_t c;
  if (lead < 0x80) {
    c = lead;
    pos += 1;
  } else if (lead < 0xE0) {
    c = ((lead & 0x1F) << 6) | (b(pos + 1) & 0x3F);
    pos += 2;
  } else if (lead < 0xF0) {
    c = ((lead & 0x0F) << 12) | ((b(pos + 1) & 0x3F) << 6) | (b(pos + 2) & 0x3F);
    pos += 3;
  } else {
    c = ((lead & 0x07) << 18) | ((b(pos + 1) & 0x3F) << 12) | ((b(pos + 2) & 0x3F) << 6) |
        (b(pos + 3) & 0x3F);
    pos += 4;
  }
  return c;
}

void append_utf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out.push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (c >> 6)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (c >> 12)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (c >> 18)));
    out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

std::string to_valid_utf8(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t length = utf8_unit_length(text, pos);
    if (length == 1 && static_cast<unsigned char>(text[pos]) >= 0x80) break;
    pos += length;
  }
  if (pos == text.size()) return std::string(text);
  return utf8_lossy(text);
}

std::string utf8_lossy(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  const auto b = [&](size_t i) { return static_cast<unsigned char>(bytes[i]); };
  size_t pos = 0;
  while (pos < bytes.size()) {
    const size_t length = utf8_unit_length(bytes, pos);
    if (length > 1 || b(pos) < 0x80) {
      out.append(bytes.substr(pos, length));
      pos += length;
      continue;
    }
    // A maximal subpart of an ill-formed sequence is replaced by one U+FFFD (Unicode 3.9).
    const unsigned char lead = b(pos);
    size_t need = 0;
    unsigned char low = 0x80, high = 0xBF;
    if (lead >= 0xC2 && lead <= 0xDF) {
      need = 1;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
      need = 2;
      if (lead == 0xE0) low = 0xA0;
      if (lead == 0xED) high = 0x9F;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      need = 3;
      if (lead == 0xF0) low = 0x90;
      if (lead == 0xF4) high = 0x8F;
    }
    size_t end = pos + 1;
    for (size_t i = 0; i < need && end < bytes.size(); ++i) {
      const unsigned char next = b(end);
      if (i == 0 ? (next < low || next > high) : (next < 0x80 || next > 0xBF)) break;
      ++end;
    }
    out += "\xEF\xBF\xBD";
    pos = end;
  }
  return out;
}

bool is_whitespace(char32_t c) {
  if (c < 0x80) return c == ' ' || (c >= 0x09 && c <= 0x0D);
  return u_hasBinaryProperty(static_cast<UChar32>(c), UCHAR_WHITE_SPACE);
}

bool is_alphabetic(char32_t c) {
  if (c < 0x80) return (c | 0x20) >= 'a' && (c | 0x20) <= 'z';
  return u_hasBinaryProperty(static_cast<UChar32>(c), UCHAR_ALPHABETIC);
}

bool is_numeric(char32_t c) {
  if (c < 0x80) return c >= '0' && c <= '9';
  const int8_t type = u_charType(static_cast<UChar32>(c));
  return type == U_DECIMAL_DIGIT_NUMBER || type == U_LETTER_NUMBER || type == U_OTHER_NUMBER;
}

bool is_alphanumeric(char32_t c) {
  return is_alphabetic(c) || is_numeric(c);
}

bool is_word_char(char32_t c) {
  if (c < 0x80) return is_alphabetic(c) || (c >= '0' && c <= '9') || c == '_';
  if (c == 0x200C || c == 0x200D) return true;
  const int8_t type = u_charType(static_cast<UChar32>(c));
  return type == U_DECIMAL_DIGIT_NUMBER || type == U_CONNECTOR_PUNCTUATION ||
         type == U_NON_SPACING_MARK || type == U_COMBINING_SPACING_MARK ||
         type == U_ENCLOSING_MARK || is_alphabetic(c);
}

bool is_mark(char32_t c) {
  if (c < 0x80) return false;
  const int8_t type = u_charType(static_cast<UChar32>(c));
  return type == U_NON_SPACING_MARK || type == U_COMBINING_SPACING_MARK || type == U_ENCLOSING_MARK;
}

bool is_punctuation(char32_t c) {
  if (c < 0x80) {
    return (c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) ||
           (c >= 123 && c <= 126);
  }
  const int8_t type = u_charType(static_cast<UChar32>(c));
  return type == U_CONNECTOR_PUNCTUATION || type == U_DASH_PUNCTUATION ||
         type == U_START_PUNCTUATION || type == U_END_PUNCTUATION ||
         type == U_INITIAL_PUNCTUATION || type == U_FINAL_PUNCTUATION ||
         type == U_OTHER_PUNCTUATION;
}

bool is_bert_control(char32_t c) {
  if (c == '\t' || c == '\n' || c == '\r') return false;
  const int8_t type = u_charType(static_cast<UChar32>(c));
  // Unassigned code points (Cn) are kept, as the reference does.
  return type == U_CONTROL_CHAR || type == U_FORMAT_CHAR || type == U_PRIVATE_USE_CHAR;
}

bool is_bert_whitespace(char32_t c) {
  return c == '\t' || c == '\n' || c == '\r' || is_whitespace(c);
}

bool is_chinese_char(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
         (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
         (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

namespace {

bool is_ascii(std::string_view text) {
  for (char ch : text) {
    if (static_cast<unsigned char>(ch) >= 0x80) return false;
  }
  return true;
}

const icu::Normalizer2& normalizer_of(NormalForm form) {
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* normalizer = nullptr;
  switch (form) {
    case NormalForm::kNfc:
      normalizer = icu::Normalizer2::getNFCInstance(status);
      break;
    case NormalForm::kNfd:
      normalizer = icu::Normalizer2::getNFDInstance(status);
      break;
    case NormalForm::kNfkc:
      normalizer = icu::Normalizer2::getNFKCInstance(status);
      break;
    case NormalForm::kNfkd:
      normalizer = icu::Normalizer2::getNFKDInstance(status);
      break;
  }
  ROTA_CHECK(U_SUCCESS(status) && normalizer != nullptr, "ICU: no Unicode normalizer ({})",
             u_errorName(status));
  return *normalizer;
}

}  // namespace

std::string normalize(std::string_view text, NormalForm form) {
  if (is_ascii(text)) return std::string(text);
  const icu::Normalizer2& normalizer = normalizer_of(form);
  UErrorCode status = U_ZERO_ERROR;
  const icu::UnicodeString source = icu::UnicodeString::fromUTF8(
      icu::StringPiece(text.data(), static_cast<int32_t>(text.size())));
  const icu::UnicodeString result = normalizer.normalize(source, status);
  ROTA_CHECK(U_SUCCESS(status), "ICU: normalisation failed ({})", u_errorName(status));
  std::string out;
  result.toUTF8String(out);
  return out;
}

std::string lowercase(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    const unsigned char b = static_cast<unsigned char>(text[pos]);
    if (b < 0x80) {
      out.push_back(static_cast<char>(b >= 'A' && b <= 'Z' ? b + 32 : b));
      ++pos;
      continue;
    }
    const char32_t c = next_code_point(text, pos);
    if (c == 0x130) {
      out += "i\xCC\x87";
    } else {
      append_utf8(out, static_cast<char32_t>(u_tolower(static_cast<UChar32>(c))));
    }
  }
  return out;
}

std::vector<size_t> grapheme_boundaries(std::string_view text) {
  std::vector<size_t> bounds;
  if (is_ascii(text)) {
    // ASCII: every byte is a cluster except CR LF, which is one.
    for (size_t i = 0; i < text.size(); ++i) {
      if (i > 0 && text[i] == '\n' && text[i - 1] == '\r') continue;
      bounds.push_back(i);
    }
    bounds.push_back(text.size());
    return bounds;
  }
  UErrorCode status = U_ZERO_ERROR;
  std::unique_ptr<icu::BreakIterator> it(
      icu::BreakIterator::createCharacterInstance(icu::Locale::getRoot(), status));
  ROTA_CHECK(U_SUCCESS(status), "ICU: no grapheme break iterator ({})", u_errorName(status));
  UText* utext = utext_openUTF8(nullptr, text.data(), static_cast<int64_t>(text.size()), &status);
  it->setText(utext, status);
  ROTA_CHECK(U_SUCCESS(status), "ICU: grapheme segmentation failed ({})", u_errorName(status));
  for (int32_t b = it->first(); b != icu::BreakIterator::DONE; b = it->next()) {
    bounds.push_back(static_cast<size_t>(b));
  }
  it.reset();
  utext_close(utext);
  if (bounds.empty() || bounds.back() != text.size()) bounds.push_back(text.size());
  return bounds;
}

}  // namespace rota::data::hf
