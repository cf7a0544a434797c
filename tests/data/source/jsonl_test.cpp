// JSON Lines records: fields by key or dotted path, blank lines, errors naming file:line.
#include <gtest/gtest.h>

#include "data/source/jsonl.h"
#include "tests/support/expect_error.h"

namespace rota::data {
namespace ROTA_TEST_FILE_NS {

using rota::testing::expect_error;

TEST(Jsonl, FieldsByKeyAndDottedPath) {
  RecordFields fields;
  fields.text = "meta.body";
  fields.label = "y";
  const auto record =
      parse_jsonl_line(R"({"meta": {"body": "héllo\nworld"}, "y": "pos"})", fields, "a.jsonl", 4);
  ASSERT_TRUE(record.has_value());
  EXPECT_EQ(record->text, "héllo\nworld");
  EXPECT_EQ(record->label, "pos");
  EXPECT_EQ(record->origin(), "a.jsonl:4");
  // A key that contains a dot is found as it is; an integer label is its decimal text.
  fields.text = "a.b";
  const auto literal = parse_jsonl_line(R"({"a.b": "x", "y": 3})", fields, "a.jsonl", 1);
  EXPECT_EQ(literal->text, "x");
  EXPECT_EQ(literal->label, "3");
  EXPECT_FALSE(parse_jsonl_line("  \t\r", fields, "a.jsonl", 2).has_value());
}

TEST(Jsonl, BadLinesAreNamedByFileAndLine) {
  RecordFields fields;
  fields.label = "label";
  expect_error([&] { parse_jsonl_line("{\"text\": \"x\"", fields, "d.jsonl", 7); },
               {"d.jsonl:7", "not valid JSON"});
  expect_error([&] { parse_jsonl_line("[1, 2]", fields, "d.jsonl", 2); },
               {"d.jsonl:2", "JSON array, not an object"});
  expect_error([&] { parse_jsonl_line(R"({"txt": "x", "label": 1})", fields, "d.jsonl", 3); },
               {"d.jsonl:3", "no field 'text'", "txt"});
  expect_error([&] { parse_jsonl_line(R"({"text": 5, "label": 1})", fields, "d.jsonl", 4); },
               {"d.jsonl:4", "field 'text' is a number, not a string"});
  expect_error([&] { parse_jsonl_line(R"({"text": "x", "label": 0.5})", fields, "d.jsonl", 5); },
               {"d.jsonl:5", "field 'label'", "not a string or an integer"});
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::data
