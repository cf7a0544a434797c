// UTF-8 / NUL checks with line:column positions, fed in blocks of any size.
#include <gtest/gtest.h>

#include "data/source/text_check.h"
#include "tests/support/expect_error.h"

namespace rota::data {
namespace ROTA_TEST_FILE_NS {

using rota::testing::expect_error;
using namespace std::string_literals;

void check_in_chunks(std::string_view bytes, size_t chunk) {
  TextCheck check("f.txt");
  for (size_t i = 0; i < bytes.size(); i += chunk) check.feed(bytes.substr(i, chunk));
  check.finish();
}

TEST(TextCheck, ValidUtf8PassesWhateverTheBlockSize) {
  const std::string text = "plain\n\xC3\xA9t\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80 \xED\x9F\xBF\n";
  for (size_t chunk : {1, 2, 3, 5, 100}) check_in_chunks(text, chunk);
}

TEST(TextCheck, NulAndMalformedBytesAreNamedByLineAndColumn) {
  for (size_t chunk : {1, 4, 100}) {
    // Columns count characters: "é" is one.
    expect_error([&] { check_in_chunks("ab\n\xC3\xA9x\0y"s, chunk); },
                 {"f.txt:2:3", "NUL byte", "binary"});
    expect_error([&] { check_in_chunks("one\ntwo\n\xC3\xA9\xFFz", chunk); },
                 {"f.txt:3:2", "byte 0xFF is not valid UTF-8"});
  }
  expect_error([] { check_in_chunks("\xC0\xAF", 1); }, {"f.txt:1:1", "0xC0"});  // overlong
  expect_error([] { check_in_chunks("\xE0\x80\x80", 1); }, {"0x80"});           // overlong 3-byte
  expect_error([] { check_in_chunks("a\xED\xA0\x80", 1); },
               {"f.txt:1:2", "bytes 0xED 0xA0 are not"});                  // surrogate
  expect_error([] { check_in_chunks("\xF4\x90\x80\x80", 1); }, {"0x90"});  // > U+10FFFF
  expect_error([] { check_in_chunks("ok\xE2\x82", 1); }, {"f.txt:1:3", "ends inside"});
  expect_error([] { check_in_chunks("\xE2\x82x", 3); },
               {"bytes 0xE2 0x82 0x78"});  // truncated sequence
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::data
