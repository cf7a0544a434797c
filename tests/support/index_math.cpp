// Index arithmetic for tests (see index_math.h).
#include "tests/support/index_math.h"

namespace rota::testing {

void for_each_index(const Shape& shape, const std::function<void(const std::vector<int64_t>&)>& f) {
  if (shape_numel(shape) == 0) return;
  std::vector<int64_t> index(shape.size(), 0);
  for (int64_t n = 0; n < shape_numel(shape); ++n) {
    f(index);
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
}

int64_t nonnegative_axis(int64_t axis, const Shape& shape) {
  return axis < 0 ? axis + static_cast<int64_t>(shape.size()) : axis;
}

}  // namespace rota::testing
