// Student's t distribution and the paired t-test (see paired_stats.h).
#include "experiments/report/paired_stats.h"

#include <cmath>
#include <limits>

namespace rota::experiments {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInfinity = std::numeric_limits<double>::infinity();

/// The continued fraction of I_x(a, b) (Numerical Recipes 6.4, modified Lentz); converges
/// quickly for x < (a + 1) / (a + b + 2).
double beta_continued_fraction(double a, double b, double x) {
  constexpr double kTiny = 1e-300;
  constexpr double kEpsilon = 1e-16;
  const double qab = a + b, qap = a + 1, qam = a - 1;
  double c = 1;
  double d = 1 - qab * x / qap;
  if (std::abs(d) < kTiny) d = kTiny;
  d = 1 / d;
  double h = d;
  for (int m = 1; m <= 10000; ++m) {
    const double m2 = 2.0 * m;
    // Even step: d_{2m} = m (b − m) x / ((a + 2m − 1)(a + 2m)).
    double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
    d = 1 + aa * d;
    if (std::abs(d) < kTiny) d = kTiny;
    c = 1 + aa / c;
    if (std::abs(c) < kTiny) c = kTiny;
    d = 1 / d;
    h *= d * c;
    // Odd step: d_{2m+1} = −(a + m)(a + b + m) x / ((a + 2m)(a + 2m + 1)).
    aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
    d = 1 + aa * d;
    if (std::abs(d) < kTiny) d = kTiny;
    c = 1 + aa / c;
    if (std::abs(c) < kTiny) c = kTiny;
    d = 1 / d;
    const double delta = d * c;
    h *= delta;
    if (std::abs(delta - 1) < kEpsilon) break;
  }
  return h;
}

}  // namespace

double regularized_incomplete_beta(double a, double b, double x) {
  if (!(a > 0) || !(b > 0) || !(x >= 0) || !(x <= 1)) return kNaN;
  if (x == 0 || x == 1) return x;
  // x^a (1 − x)^b / B(a, b), in logarithms.
  const double front = std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) +
                                a * std::log(x) + b * std::log1p(-x));
  if (x < (a + 1) / (a + b + 2)) return front * beta_continued_fraction(a, b, x) / a;
  return 1 - front * beta_continued_fraction(b, a, 1 - x) / b;
}

double student_t_two_sided_p(double t, double df) {
  if (!(df > 0) || std::isnan(t)) return kNaN;
  if (std::isinf(t)) return 0;
  return regularized_incomplete_beta(df / 2, 0.5, df / (df + t * t));
}

double student_t_cdf(double t, double df) {
  if (!(df > 0) || std::isnan(t)) return kNaN;
  const double tail = student_t_two_sided_p(t, df) / 2;  // P(T >= |t|)
  return t >= 0 ? 1 - tail : tail;
}

double student_t_quantile(double p, double df) {
  if (!(df > 0) || !(p >= 0) || !(p <= 1)) return kNaN;
  if (p == 0) return -kInfinity;
  if (p == 1) return kInfinity;
  if (p == 0.5) return 0;
  // By symmetry solve for the upper half, where the CDF is computed from the small tail.
  const double upper = p > 0.5 ? p : 1 - p;
  const double tail = 1 - upper;  // P(T >= t) wanted
  double low = 0, high = 1;
  while (student_t_two_sided_p(high, df) / 2 > tail) {
    low = high;
    high *= 2;
    if (std::isinf(high)) return p > 0.5 ? kInfinity : -kInfinity;
  }
  // The upper-tail probability falls with t; bisect until the bracket cannot shrink.
  for (int i = 0; i < 2000; ++i) {
    const double mid = low + (high - low) / 2;
    if (mid <= low || mid >= high) break;
    if (student_t_two_sided_p(mid, df) / 2 > tail) {
      low = mid;
    } else {
      high = mid;
    }
  }
  const double t = low + (high - low) / 2;
  return p > 0.5 ? t : -t;
}

PairedComparison compare_paired(const std::vector<double>& differences, double confidence) {
  PairedComparison c;
  double sum = 0;
  for (const double d : differences) {
    if (!std::isfinite(d)) continue;
    sum += d;
    ++c.n;
  }
  if (c.n == 0) {
    c.mean = c.std = c.ci_low = c.ci_high = c.t = c.p_value = kNaN;
    return c;
  }
  c.mean = sum / c.n;
  if (c.n < 2) {
    c.std = c.ci_low = c.ci_high = c.t = c.p_value = kNaN;
    return c;
  }
  double squares = 0;
  for (const double d : differences) {
    if (std::isfinite(d)) squares += (d - c.mean) * (d - c.mean);
  }
  c.std = std::sqrt(squares / (c.n - 1));
  const double df = c.n - 1;
  const double standard_error = c.std / std::sqrt(static_cast<double>(c.n));
  if (standard_error == 0) {
    // Every difference is the same: no spread to test against.
    c.ci_low = c.ci_high = c.mean;
    c.t = c.mean == 0 ? 0 : c.mean > 0 ? kInfinity : -kInfinity;
    c.p_value = c.mean == 0 ? 1 : 0;
  } else {
    const double half = student_t_quantile((1 + confidence) / 2, df) * standard_error;
    c.ci_low = c.mean - half;
    c.ci_high = c.mean + half;
    c.t = c.mean / standard_error;
    c.p_value = student_t_two_sided_p(c.t, df);
  }
  c.within_noise = c.ci_low <= 0 && c.ci_high >= 0;
  return c;
}

}  // namespace rota::experiments
