// Power-of-two position buckets for `rota eval --by-position`.
#include "app/tasks/position_buckets.h"

#include <gtest/gtest.h>

#include "framework/base/error.h"

namespace rota::app {
namespace ROTA_TEST_FILE_NS {

TEST(PositionBuckets, PowersOfTwoCutAtTheContextAndEveryPositionInItsBucket) {
  const std::vector<PositionBucket> one = position_buckets(1);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].first, 1);
  EXPECT_EQ(one[0].last, 1);
  for (const int64_t context : {2, 3, 8, 48, 64, 1000}) {
    const std::vector<PositionBucket> buckets = position_buckets(context);
    EXPECT_EQ(buckets.front().first, 1);
    EXPECT_EQ(buckets.back().last, context);
    for (size_t k = 0; k < buckets.size(); ++k) {
      EXPECT_EQ(buckets[k].first, int64_t{1} << k);
      if (k + 1 < buckets.size()) {
        EXPECT_EQ(buckets[k + 1].first, buckets[k].last + 1);
      }
      EXPECT_EQ(buckets[k].tokens, 0);
    }
    for (int64_t p = 1; p <= context; ++p) {
      const PositionBucket& b = buckets.at(static_cast<size_t>(bucket_of(p)));
      EXPECT_LE(b.first, p);
      EXPECT_GE(b.last, p);
    }
  }
  EXPECT_EQ(position_buckets(48).size(), 6u);  // 1, 2-3, 4-7, 8-15, 16-31, 32-48
  EXPECT_THROW(position_buckets(0), Error);
  EXPECT_THROW(bucket_of(0), Error);
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::app
