// UTF-8 scanning (RFC 3629 well-formedness, Unicode Table 3-7).
#include "data/util/utf8.h"

#include "framework/base/error.h"

namespace rota::data {

size_t utf8_unit_length(std::string_view text, size_t pos) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(pos);
  if (lead < 0x80) return 1;
  size_t length;
  unsigned char low = 0x80, high = 0xBF;  // allowed range of the second byte
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;   // no overlongs
    if (lead == 0xED) high = 0x9F;  // no surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;   // no overlongs
    if (lead == 0xF4) high = 0x8F;  // nothing above U+10FFFF
  } else {
    return 1;  // continuation byte, C0/C1 or F5..FF: a stray byte
  }
  if (pos + length > text.size()) return 1;
  if (byte(pos + 1) < low || byte(pos + 1) > high) return 1;
  for (size_t i = 2; i < length; ++i) {
    if (byte(pos + i) < 0x80 || byte(pos + i) > 0xBF) return 1;
  }
  return length;
}

int64_t utf8_unit_count(std::string_view text) {
  int64_t count = 0;
  for (size_t pos = 0; pos < text.size(); pos += utf8_unit_length(text, pos)) ++count;
  return count;
}

size_t utf8_unit_offset(std::string_view text, int64_t index) {
  ROTA_CHECK(index >= 0, "utf8_unit_offset: negative index {}", index);
  size_t pos = 0;
  for (int64_t i = 0; i < index; ++i) {
    ROTA_CHECK(pos < text.size(), "utf8_unit_offset: index {} beyond the {} units of the text",
               index, i);
    pos += utf8_unit_length(text, pos);
  }
  return pos;
}

bool is_valid_utf8(std::string_view text) {
  for (size_t pos = 0; pos < text.size();) {
    const size_t length = utf8_unit_length(text, pos);
    if (length == 1 && static_cast<unsigned char>(text[pos]) >= 0x80) return false;
    pos += length;
  }
  return true;
}

}  // namespace rota::data
