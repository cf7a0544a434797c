// UTF-8 and NUL checking with line and column positions.
#include "data/source/text_check.h"

#include "framework/base/error.h"

namespace rota::data {

void TextCheck::invalid(unsigned char byte) const {
  std::string bytes;
  for (const char c : sequence_) bytes += fmt::format("0x{:02X} ", static_cast<unsigned char>(c));
  bytes += fmt::format("0x{:02X}", byte);
  fail(
      "data: {}:{}:{}: {} {} {} not valid UTF-8; the data must be UTF-8 text (convert it, e.g. "
      "`iconv -f LATIN1 -t UTF-8`)",
      file_, line_, column_, sequence_.empty() ? "byte" : "bytes", bytes,
      sequence_.empty() ? "is" : "are");
}

void TextCheck::feed(std::string_view bytes) {
  for (const char ch : bytes) {
    const auto byte = static_cast<unsigned char>(ch);
    if (pending_ > 0) {
      if (byte < low_ || byte > high_) invalid(byte);
      low_ = 0x80;
      high_ = 0xBF;
      sequence_.push_back(ch);
      if (--pending_ == 0) {
        ++column_;
        sequence_.clear();
      }
      continue;
    }
    if (byte == 0) {
      fail("data: {}:{}:{}: NUL byte: this is binary content, not text", file_, line_, column_);
    }
    if (byte < 0x80) {
      if (byte == '\n') {
        ++line_;
        column_ = 1;
      } else {
        ++column_;
      }
    } else if (sequence_.assign(1, ch); byte >= 0xC2 && byte <= 0xDF) {
      pending_ = 1;
    } else if (byte >= 0xE0 && byte <= 0xEF) {
      pending_ = 2;
      if (byte == 0xE0) low_ = 0xA0;   // no overlongs
      if (byte == 0xED) high_ = 0x9F;  // no surrogates
    } else if (byte >= 0xF0 && byte <= 0xF4) {
      pending_ = 3;
      if (byte == 0xF0) low_ = 0x90;   // no overlongs
      if (byte == 0xF4) high_ = 0x8F;  // nothing above U+10FFFF
    } else {
      sequence_.clear();
      invalid(byte);
    }
  }
}

void TextCheck::finish() {
  ROTA_CHECK(pending_ == 0, "data: {}:{}:{}: the file ends inside a UTF-8 sequence", file_, line_,
             column_);
}

}  // namespace rota::data
