// Shape helpers: element counts, printing, broadcasting, axis normalisation, reduced shapes.
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "framework/base/error.h"
#include "framework/tensor/shape.h"
#include "tests/support/expect_error.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

using testing::expect_error;

TEST(Shape, NumelAndString) {
  EXPECT_EQ(shape_numel({}), 1);
  EXPECT_EQ(shape_numel({0}), 0);
  EXPECT_EQ(shape_numel({2, 0, 5}), 0);
  EXPECT_EQ(shape_numel({2, 3, 4}), 24);
  EXPECT_EQ(shape_str({}), "[]");
  EXPECT_EQ(shape_str({7}), "[7]");
  EXPECT_EQ(shape_str({4, 128, 256}), "[4,128,256]");
  EXPECT_EQ(shape_str({-1, 2}), "[-1,2]");
}

TEST(Shape, BroadcastFollowsNumpy) {
  struct Case {
    Shape a, b, out;
  };
  const Case cases[] = {
      {{}, {}, {}},
      {{3}, {}, {3}},
      {{}, {2, 3}, {2, 3}},
      {{2, 1, 4}, {3, 1}, {2, 3, 4}},
      {{1}, {5}, {5}},
      {{5, 1}, {1, 6}, {5, 6}},
      {{0, 1}, {1, 3}, {0, 3}},
      {{1, 0}, {4, 1}, {4, 0}},
      {{2, 3}, {2, 3}, {2, 3}},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(broadcast_shapes(c.a, c.b, "op"), c.out) << shape_str(c.a) << " " << shape_str(c.b);
    EXPECT_EQ(broadcast_shapes(c.b, c.a, "op"), c.out) << "symmetric";
  }
  expect_error([] { broadcast_shapes({2, 3}, {3, 2}, "add"); }, {"add", "[2,3]", "[3,2]"});
  expect_error([] { broadcast_shapes({2}, {0}, "mul"); }, {"mul", "[2]", "[0]"});
}

TEST(Shape, NormalizeAxis) {
  EXPECT_EQ(normalize_axis(0, 3, "op"), 0);
  EXPECT_EQ(normalize_axis(2, 3, "op"), 2);
  EXPECT_EQ(normalize_axis(-1, 3, "op"), 2);
  EXPECT_EQ(normalize_axis(-3, 3, "op"), 0);
  expect_error([] { normalize_axis(3, 3, "sum"); }, {"sum", "3"});
  expect_error([] { normalize_axis(-4, 3, "sum"); }, {"sum", "-4"});
  expect_error([] { normalize_axis(0, 0, "mean"); }, {"mean"});
}

TEST(Shape, NormalizeAxes) {
  EXPECT_EQ(normalize_axes({}, 3, "op"), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(normalize_axes({}, 0, "op"), (std::vector<int64_t>{}));
  EXPECT_EQ(normalize_axes({-1, 0}, 3, "op"), (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(normalize_axes({2, 1}, 4, "op"), (std::vector<int64_t>{1, 2}));
  expect_error([] { normalize_axes({1, -2}, 3, "sum"); }, {"sum", "repeated"});
  expect_error([] { normalize_axes({0, 5}, 3, "sum"); }, {"sum", "5"});
}

TEST(Shape, ReducedShape) {
  EXPECT_EQ(reduced_shape({2, 3, 4}, {1}, false), (Shape{2, 4}));
  EXPECT_EQ(reduced_shape({2, 3, 4}, {1}, true), (Shape{2, 1, 4}));
  EXPECT_EQ(reduced_shape({2, 3, 4}, {0, 2}, false), (Shape{3}));
  EXPECT_EQ(reduced_shape({2, 3, 4}, {0, 1, 2}, false), (Shape{}));
  EXPECT_EQ(reduced_shape({2, 3, 4}, {0, 1, 2}, true), (Shape{1, 1, 1}));
  EXPECT_EQ(reduced_shape({2, 3, 4}, {}, false), (Shape{2, 3, 4}));
}

TEST(Error, CheckMacroFormatsAndThrowsRotaError) {
  try {
    ROTA_CHECK(1 + 1 == 3, "op: {} vs {}", shape_str({1, 2}), 7);
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "op: [1,2] vs 7");
  }
  // The condition is evaluated once and the message arguments only on failure.
  int evaluated = 0;
  int formatted = 0;
  auto arg = [&] {
    ++formatted;
    return 1;
  };
  ROTA_CHECK(++evaluated == 1, "never {}", arg());
  EXPECT_EQ(evaluated, 1);
  EXPECT_EQ(formatted, 0);
  // rota::Error is a std::runtime_error.
  EXPECT_THROW(ROTA_CHECK(false, "x"), std::runtime_error);
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
