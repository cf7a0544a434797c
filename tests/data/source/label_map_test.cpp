// Label maps: explicit lists, derived from training labels, JSON round trip, unknown labels.
#include <gtest/gtest.h>

#include "data/source/label_map.h"
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

TEST(LabelMap, JsonRoundTrip) {
  const LabelMap map = LabelMap::from_names({"neg", "pos", "ünïcode"});
  const LabelMap back = LabelMap::from_json(map.to_json(), "labels.json");
  EXPECT_EQ(back.names(), map.names());
  expect_error([] { LabelMap::from_json("{\"labels\": []}", "x/labels.json"); },
               "x/labels.json is not a rota.labels");
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::data
