// Streaming checks that a file is UTF-8 text: no NUL bytes, no malformed sequences.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace rota::data {

/// Fed a file's bytes in blocks of any size, throws rota::Error at the first NUL byte
/// ("binary content") or byte that is not well-formed UTF-8 (overlongs, surrogates, values
/// above U+10FFFF and truncated sequences included), naming file:line:column. Lines are
/// counted at '\n' from 1; columns count characters (code points) from 1.
class TextCheck {
 public:
  explicit TextCheck(std::string file) : file_(std::move(file)) {}
  void feed(std::string_view bytes);
  /// The end of the file: a sequence left unfinished is an error.
  void finish();

 private:
  [[noreturn]] void invalid(unsigned char byte) const;
  std::string sequence_;  // the bytes of the pending sequence

  std::string file_;
  int64_t line_ = 1;
  int64_t column_ = 1;
  int pending_ = 0;                         // continuation bytes still expected
  unsigned char low_ = 0x80, high_ = 0xBF;  // range of the next continuation byte
};

}  // namespace rota::data
