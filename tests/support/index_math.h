// Index arithmetic for tests, written apart from the library: multi-index walks, axis numbers.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "framework/tensor/shape.h"

namespace rota::testing {

/// Calls f(index) for every multi-index of `shape` in row-major order: once with {} for a 0-d
/// shape, never when a dim is 0. Written apart from strided_loop.h so that tests do not check
/// the library against itself.
void for_each_index(const Shape& shape, const std::function<void(const std::vector<int64_t>&)>& f);

/// `axis` counted from the front: axis + rank for a negative axis (-1 is the last dim).
int64_t nonnegative_axis(int64_t axis, const Shape& shape);

}  // namespace rota::testing
