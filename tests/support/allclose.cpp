// allclose assertion.
#include "tests/support/allclose.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>

namespace rota::testing {

::testing::AssertionResult allclose(const Tensor& actual, const Tensor& expected, double rtol,
                                    double atol) {
  if (actual.shape() != expected.shape()) {
    return ::testing::AssertionFailure() << "shape " << shape_str(actual.shape()) << " vs expected "
                                         << shape_str(expected.shape());
  }
  const std::vector<double> a = actual.to_double_vector();
  const std::vector<double> e = expected.to_double_vector();
  size_t bad = 0;
  size_t worst = 0;
  double worst_excess = -1;
  for (size_t i = 0; i < a.size(); ++i) {
    const double err = std::abs(a[i] - e[i]);
    const double allowed = atol + rtol * std::abs(e[i]);
    const bool ok = std::isfinite(err) ? err <= allowed : a[i] == e[i];
    if (!ok) {
      ++bad;
      const double excess = std::isfinite(err) ? err / (allowed > 0 ? allowed : 1e-300) : INFINITY;
      if (excess > worst_excess) {
        worst_excess = excess;
        worst = i;
      }
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << fmt::format(
             "{} of {} elements differ (rtol {}, atol {}); worst at flat index {}: "
             "actual {:.9g} expected {:.9g} (abs err {:.3g})",
             bad, a.size(), rtol, atol, worst, a[worst], e[worst], std::abs(a[worst] - e[worst]));
}

double max_relative_error(const Tensor& actual, const Tensor& expected) {
  const std::vector<double> a = actual.to_double_vector(), b = expected.to_double_vector();
  EXPECT_EQ(a.size(), b.size());
  double diff = 0, scale = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    diff = std::max(diff, std::abs(a[i] - b[i]));
    scale = std::max(scale, std::abs(b[i]));
  }
  return scale > 0 ? diff / scale : diff;
}

}  // namespace rota::testing
