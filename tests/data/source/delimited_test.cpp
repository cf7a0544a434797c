// RFC 4180 CSV/TSV records: quoting, doubled quotes, embedded newlines, CRLF, errors by line.
#include <gtest/gtest.h>

#include "data/source/delimited.h"
#include "tests/support/expect_error.h"

namespace rota::data {
namespace ROTA_TEST_FILE_NS {

using rota::testing::expect_error;

struct Row {
  std::vector<std::string> fields;
  int64_t line;
  bool operator==(const Row&) const = default;
};

std::vector<Row> parse(std::string_view bytes, char delimiter = ',', size_t chunk = 1 << 20) {
  std::vector<Row> rows;
  DelimitedReader reader("t.csv", delimiter, [&](std::vector<std::string>& fields, int64_t line) {
    rows.push_back({fields, line});
  });
  for (size_t i = 0; i < bytes.size(); i += chunk) reader.feed(bytes.substr(i, chunk));
  reader.finish();
  return rows;
}

TEST(Delimited, QuotedFieldsHoldDelimitersQuotesAndLineBreaks) {
  const std::string csv =
      "text,label\r\n"
      "\"great, really\",pos\r\n"
      "\"she said \"\"no\"\"\",neg\r\n"
      "\"two\r\nlines\nthree\",pos\r\n"
      "\r\n"                          // a blank line is skipped
      "plain \"quote\" inside,neg\n"  // a bare quote in an unquoted field is kept
      ",\n"                           // two empty fields
      "last,pos";                     // no final line break
  const std::vector<Row> expected = {
      {{"text", "label"}, 1},
      {{"great, really", "pos"}, 2},
      {{"she said \"no\"", "neg"}, 3},
      {{"two\r\nlines\nthree", "pos"}, 4},
      {{"plain \"quote\" inside", "neg"}, 8},
      {{"", ""}, 9},
      {{"last", "pos"}, 10},
  };
  for (size_t chunk : {1, 2, 3, 7, 1000}) EXPECT_EQ(parse(csv, ',', chunk), expected) << chunk;
}

TEST(Delimited, TsvUsesTabsWithTheSameQuoting) {
  EXPECT_EQ(parse("a\tb\n\"x\ty\"\t\"1,2\"\n", '\t'),
            (std::vector<Row>{{{"a", "b"}, 1}, {{"x\ty", "1,2"}, 2}}));
}

TEST(Delimited, UnterminatedQuoteNamesTheLineWhereTheFieldStarted) {
  expect_error([] { parse("text,label\nok,pos\n\"never closed,neg\nmore\nlines\n"); },
               {"t.csv:3:", "never closed"});
  expect_error([] { parse("a,b\n\"x\"y,z\n"); }, {"t.csv:2:", "'y' after the closing quote"});
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::data
