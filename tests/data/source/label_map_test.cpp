// Label maps: explicit lists, derived from training labels, JSON round trip, unknown labels.
#include <gtest/gtest.h>

#include "data/source/label_map.h"
#include "data/util/utf8.h"
#include "tests/support/expect_error.h"

namespace rota::data {
namespace ROTA_TEST_FILE_NS {

using rota::testing::expect_error;

TEST(LabelMap, ExplicitNamesKeepTheirOrder) {
  const LabelMap map = LabelMap::from_names({"pos", "neg"});
  EXPECT_EQ(map.id("neg", "f:1"), 1);
  EXPECT_EQ(map.name(0), "pos");
  expect_error([] { LabelMap::from_names({"a", "b", "a"}); }, "\"a\" is listed twice");
  expect_error([&] { map.id("neutral", "v.csv:9"); },
               {"v.csv:9", "\"neutral\"", "\"pos\", \"neg\""});
}

TEST(LabelMap, DerivedFromTrainingLabels) {
  // Strings: distinct labels in sorted order.
  const LabelMap words = LabelMap::from_training_labels({"pos", "neg", "pos", "mixed"}, 3, "train");
  EXPECT_EQ(words.names(), (std::vector<std::string>{"mixed", "neg", "pos"}));
  // Integers below num_classes: the identity, even for classes that never occur.
  const LabelMap numbers = LabelMap::from_training_labels({"2", "0", "2"}, 4, "train");
  EXPECT_EQ(numbers.names(), (std::vector<std::string>{"0", "1", "2", "3"}));
  EXPECT_EQ(numbers.id("3", "x"), 3);
  // "10" sorts before "9" as a string; integer labels are never sorted as strings.
  const LabelMap ten = LabelMap::from_training_labels({"9", "10", "0"}, 11, "train");
  EXPECT_EQ(ten.id("10", "x"), 10);
  expect_error(
      [] {
        LabelMap::from_training_labels({"neg", "pos", "neutral"}, 2, "train (a.csv)");
      },
      {"train (a.csv) has 3 distinct labels", "num_classes is 2"});
}

TEST(LabelMap, LabelsThatAreNotUtf8AreRefusedNamingTheFile) {
  expect_error(
      [] {
        LabelMap::from_training_labels({"caf\xe9", "tea"}, 2, "drinks.csv");
      },
      {"labels: drinks.csv: the label", "is not valid UTF-8 text", "iconv"});
  EXPECT_EQ(LabelMap::from_training_labels({"caf\xc3\xa9", "tea"}, 2, "drinks.csv").size(), 2);
  EXPECT_TRUE(is_valid_utf8("caf\xc3\xa9 \xf0\x9f\x98\x80"));
  EXPECT_FALSE(is_valid_utf8("caf\xe9"));
  EXPECT_FALSE(is_valid_utf8("\xc3"));          // a sequence cut short
  EXPECT_FALSE(is_valid_utf8("\xed\xa0\x80"));  // a surrogate
}

TEST(LabelMap, JsonRoundTrip) {
  const LabelMap map = LabelMap::from_names({"neg", "pos", "ünïcode"});
  const LabelMap back = LabelMap::from_json(map.to_json(), "labels.json");
  EXPECT_EQ(back.names(), map.names());
  expect_error([] { LabelMap::from_json("{\"labels\": []}", "x/labels.json"); },
               "x/labels.json is not a rota.labels");
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::data
