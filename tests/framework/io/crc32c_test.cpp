// CRC-32C: published check values, the table and SSE 4.2 paths against a bitwise reference.
#include "framework/io/crc32c.h"

#include <string>

#include <gtest/gtest.h>

#include "framework/tensor/random.h"
#include "tests/framework/io/io_test_util.h"

namespace rota::io {
namespace ROTA_TEST_FILE_NS {

using testing::bitwise_crc32c;

std::string bytes_of(std::initializer_list<int> values) {
  std::string s;
  for (int v : values) s.push_back(static_cast<char>(v));
  return s;
}

std::string repeated(int count, int value) {
  return std::string(count, static_cast<char>(value));
}

TEST(Crc32c, PublishedCheckValues) {
  // The standard check value of CRC-32C ("123456789") and the iSCSI vectors of RFC 3720 B.4.
  std::string ascending, descending;
  for (int i = 0; i < 32; ++i) {
    ascending.push_back(static_cast<char>(i));
    descending.push_back(static_cast<char>(31 - i));
  }
  const std::pair<std::string, uint32_t> cases[] = {
      {"123456789", 0xE3069283u},        {repeated(32, 0x00), 0x8A9136AAu},
      {repeated(32, 0xFF), 0x62A8AB43u}, {ascending, 0x46DD794Eu},
      {descending, 0x113FDB5Cu},         {"", 0x00000000u},
  };
  for (const auto& [input, expected] : cases) {
    EXPECT_EQ(crc32c(input), expected) << "input of " << input.size() << " bytes";
    EXPECT_EQ(crc32c_portable(input.data(), input.size()), expected);
    EXPECT_EQ(bitwise_crc32c(input), expected);  // the test's own reference agrees too
  }
  EXPECT_EQ(crc32c(bytes_of({0x61})), bitwise_crc32c("a"));
}

TEST(Crc32c, MatchesBitwiseReferenceForEveryLengthAndAlignment) {
  Generator gen(7);
  std::string buffer(300, '\0');
  for (char& c : buffer) c = static_cast<char>(gen.next_below(256));
  for (size_t offset = 0; offset < 8; ++offset) {
    for (size_t length = 0; length + offset <= 200; ++length) {
      const std::string piece = buffer.substr(offset, length);
      const uint32_t expected = bitwise_crc32c(piece);
      ASSERT_EQ(crc32c(buffer.data() + offset, length), expected)
          << "offset " << offset << " length " << length;
      ASSERT_EQ(crc32c_portable(buffer.data() + offset, length), expected)
          << "offset " << offset << " length " << length;
    }
  }
}

TEST(Crc32c, IncrementalEqualsWhole) {
  Generator gen(11);
  std::string data(1000, '\0');
  for (char& c : data) c = static_cast<char>(gen.next_below(256));
  const uint32_t whole = crc32c(data);
  for (size_t split : {0, 1, 7, 8, 9, 500, 999, 1000}) {
    const uint32_t first = crc32c(data.data(), split);
    EXPECT_EQ(crc32c(data.data() + split, data.size() - split, first), whole) << split;
    EXPECT_EQ(crc32c_portable(data.data() + split, data.size() - split,
                              crc32c_portable(data.data(), split)),
              whole)
        << split;
  }
}

TEST(Crc32c, MaskIsTheTfRecordRotationAndInvertible) {
  for (uint32_t crc : {0u, 1u, 0xE3069283u, 0xFFFFFFFFu, 0x80000000u, 0x12345678u}) {
    // Independent statement of the TFRecord mask: rotate right 15, add 0xa282ead8 mod 2^32.
    const uint64_t rotated = ((crc >> 15) | (static_cast<uint64_t>(crc) << 17)) & 0xFFFFFFFFu;
    EXPECT_EQ(mask_crc32c(crc), static_cast<uint32_t>((rotated + 0xA282EAD8u) & 0xFFFFFFFFu));
    EXPECT_EQ(unmask_crc32c(mask_crc32c(crc)), crc);
  }
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::io
