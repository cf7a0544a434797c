// Power-of-two position buckets (see position_buckets.h).
#include "app/tasks/position_buckets.h"

#include <algorithm>
#include <bit>

#include "framework/base/error.h"

namespace rota::app {

std::vector<PositionBucket> position_buckets(int64_t context) {
  ROTA_CHECK(context >= 1, "position buckets: the context must be >= 1, got {}", context);
  std::vector<PositionBucket> buckets;
  for (int64_t first = 1; first <= context; first *= 2) {
    buckets.push_back({first, std::min(2 * first - 1, context), 0.0, 0});
  }
  return buckets;
}

int64_t bucket_of(int64_t position) {
  ROTA_CHECK(position >= 1, "position buckets: position {} is below 1", position);
  return std::bit_width(static_cast<uint64_t>(position)) - 1;
}

}  // namespace rota::app
