// Losses by position in the window (`rota eval --by-position`): power-of-two position buckets.
#pragma once

#include <cstdint>
#include <vector>

namespace rota::app {

/// Positions [first, last] of an evaluation window, 1-based: position p predicts the window's
/// token p + 1 from its first p tokens. Bucket k covers [2^k, 2^(k+1) − 1], the last one cut at
/// the window length.
struct PositionBucket {
  int64_t first = 1;
  int64_t last = 1;
  double loss_sum = 0.0;  // Σ of the positions' losses over every scored token
  int64_t tokens = 0;     // scored tokens at these positions
};

/// The empty buckets of windows of `context` >= 1 tokens: [1, 1], [2, 3], [4, 7], ...
std::vector<PositionBucket> position_buckets(int64_t context);

/// The bucket of 1-based position p >= 1: floor(log2 p).
int64_t bucket_of(int64_t position);

}  // namespace rota::app
