// Batch loader: deterministic shuffles, exact resume from a cursor, disjoint covering shards.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "data/loader/batch_loader.h"
#include "framework/base/error.h"
#include "tests/support/expect_error.h"

namespace rota::data {
namespace ROTA_TEST_FILE_NS {

LoaderOptions options_with(int64_t batch_size, uint64_t seed, int64_t rank = 0, int64_t world = 1,
                           bool drop_last = true) {
  return {.batch_size = batch_size,
          .drop_last = drop_last,
          .seed = seed,
          .rank = rank,
          .world_size = world};
}

std::vector<std::vector<int64_t>> take(BatchLoader& loader, int steps) {
  std::vector<std::vector<int64_t>> batches;
  for (int s = 0; s < steps; ++s) batches.push_back(loader.next().indices);
  return batches;
}

TEST(BatchLoader, EachEpochIsASeededPermutation) {
  BatchLoader a(50, options_with(5, 7)), b(50, options_with(5, 7)), c(50, options_with(5, 8));
  EXPECT_EQ(a.batches_per_epoch(), 10);
  const auto first = take(a, 30);
  EXPECT_EQ(first, take(b, 30));
  EXPECT_NE(first, take(c, 30));
  for (int epoch = 0; epoch < 3; ++epoch) {
    std::vector<int64_t> seen;
    for (int s = 0; s < 10; ++s)
      seen.insert(seen.end(), first[epoch * 10 + s].begin(), first[epoch * 10 + s].end());
    std::sort(seen.begin(), seen.end());
    for (int64_t i = 0; i < 50; ++i) ASSERT_EQ(seen[i], i) << "epoch " << epoch;
  }
  EXPECT_NE(a.epoch_order(0), a.epoch_order(1));
  EXPECT_EQ(a.cursor(), (LoaderCursor{2, 50}));
}

// The order is held as 32-bit indices: a larger dataset is refused up front, and what next()
// hands out is exactly epoch_order (computed in 64 bits) in consecutive slices.
TEST(BatchLoader, OrderHeldIn32BitsIsTheEpochOrder) {
  rota::testing::expect_error([] { BatchLoader(int64_t{1} << 32, options_with(4, 1, 0, 1, true)); },
                              "more than the 4,294,967,295");
  BatchLoader loader(1000, options_with(8, 3, 0, 1, true));
  for (int64_t epoch = 0; epoch < 2; ++epoch) {
    const std::vector<int64_t> order = loader.epoch_order(epoch);
    for (int64_t b = 0; b < loader.batches_per_epoch(); ++b) {
      const std::vector<int64_t> expected(order.begin() + b * 8, order.begin() + b * 8 + 8);
      ASSERT_EQ(loader.next().indices, expected) << "epoch " << epoch << " batch " << b;
    }
  }
}

TEST(BatchLoader, ResumeFromACursorContinuesExactly) {
  for (const bool drop_last : {true, false}) {
    BatchLoader straight(23, options_with(4, 11, 0, 1, drop_last));
    const auto expected = take(straight, 20);
    for (int split : {0, 1, 5, 6, 7, 13}) {
      BatchLoader first(23, options_with(4, 11, 0, 1, drop_last));
      auto got = take(first, split);
      const LoaderCursor saved = first.cursor();
      BatchLoader resumed(23, options_with(4, 11, 0, 1, drop_last));
      resumed.restore(saved);
      const auto rest = take(resumed, 20 - split);
      got.insert(got.end(), rest.begin(), rest.end());
      EXPECT_EQ(got, expected) << "split at " << split << " drop_last " << drop_last;
    }
  }
  BatchLoader loader(10, options_with(2, 0));
  EXPECT_THROW(loader.restore(LoaderCursor{0, 11}), Error);
  EXPECT_THROW(loader.restore(LoaderCursor{-1, 0}), Error);
}

TEST(BatchLoader, DropLastSkipsTheIncompleteBatchOtherwiseKeepsIt) {
  BatchLoader dropping(10, options_with(4, 1));
  EXPECT_EQ(dropping.batches_per_epoch(), 2);
  const auto batches = take(dropping, 3);
  EXPECT_EQ(batches[2].size(), 4u);
  EXPECT_EQ(dropping.cursor().epoch, 1);

  LoaderOptions in_order = options_with(4, 1, 0, 1, false);
  in_order.shuffle = false;
  BatchLoader keeping(10, in_order);
  EXPECT_EQ(keeping.batches_per_epoch(), 3);
  EXPECT_EQ(take(keeping, 3),
            (std::vector<std::vector<int64_t>>{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9}}));
  EXPECT_THROW(BatchLoader(3, options_with(4, 1)), Error);
  EXPECT_THROW(BatchLoader(10, options_with(2, 1, 2, 2)), Error);  // rank outside world
}

// Every rank's part of a global batch is disjoint from the others, and together they are the
// global batch a single process with batch_size * world_size would draw.
TEST(BatchLoader, ShardsAreDisjointAndCoverEachGlobalBatch) {
  for (const bool drop_last : {true, false}) {
    const int64_t N = 50, B = 4, W = 3;
    BatchLoader global(N, options_with(B * W, 5, 0, 1, drop_last));
    std::vector<BatchLoader> ranks;
    for (int64_t r = 0; r < W; ++r) ranks.emplace_back(N, options_with(B, 5, r, W, drop_last));
    EXPECT_EQ(ranks[0].batches_per_epoch(), global.batches_per_epoch());
    const int64_t steps = 2 * global.batches_per_epoch();  // two epochs
    std::set<int64_t> epoch_seen;
    for (int64_t s = 0; s < steps; ++s) {
      const LoaderBatch whole = global.next();
      std::vector<int64_t> joined;
      for (int64_t r = 0; r < W; ++r) {
        const LoaderBatch part = ranks[r].next();
        EXPECT_EQ(part.epoch, whole.epoch);
        EXPECT_EQ(part.step_in_epoch, whole.step_in_epoch);
        if (drop_last) {
          EXPECT_EQ(static_cast<int64_t>(part.indices.size()), B);
        }
        joined.insert(joined.end(), part.indices.begin(), part.indices.end());
      }
      EXPECT_EQ(joined, whole.indices) << "step " << s;
      const std::set<int64_t> unique(joined.begin(), joined.end());
      EXPECT_EQ(unique.size(), joined.size()) << "ranks overlap at step " << s;
      if (whole.step_in_epoch == 0) epoch_seen.clear();
      for (int64_t i : joined) EXPECT_TRUE(epoch_seen.insert(i).second) << "seen twice in an epoch";
      if (whole.step_in_epoch == global.batches_per_epoch() - 1) {
        EXPECT_EQ(static_cast<int64_t>(epoch_seen.size()), drop_last ? 48 : N);
      }
    }
  }
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::data
