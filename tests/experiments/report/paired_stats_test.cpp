// Student's t distribution and the paired t-test against published table values, closed forms
// and hand-computed examples.
#include "experiments/report/paired_stats.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <vector>

namespace rota::experiments {
namespace ROTA_TEST_FILE_NS {

constexpr double kPi = std::numbers::pi;

TEST(IncompleteBeta, ClosedFormsAndSymmetry) {
  for (const double x : {0.0, 1e-6, 0.1, 0.3, 0.5, 0.77, 0.999, 1.0}) {
    EXPECT_NEAR(regularized_incomplete_beta(1, 1, x), x, 1e-14) << x;
    EXPECT_NEAR(regularized_incomplete_beta(3.5, 1, x), std::pow(x, 3.5), 1e-14) << x;
    EXPECT_NEAR(regularized_incomplete_beta(1, 4, x), 1 - std::pow(1 - x, 4), 1e-14) << x;
    EXPECT_NEAR(regularized_incomplete_beta(2, 2, x), 3 * x * x - 2 * x * x * x, 1e-14) << x;
    // I_x(1/2, 1/2) = (2/π) asin(√x), the arcsine distribution.
    EXPECT_NEAR(regularized_incomplete_beta(0.5, 0.5, x), 2 / kPi * std::asin(std::sqrt(x)), 1e-13)
        << x;
    // I_x(a, b) = 1 − I_{1−x}(b, a).
    EXPECT_NEAR(regularized_incomplete_beta(7.5, 0.5, x),
                1 - regularized_incomplete_beta(0.5, 7.5, 1 - x), 1e-14)
        << x;
  }
  EXPECT_NEAR(regularized_incomplete_beta(6, 6, 0.5), 0.5, 1e-14);  // symmetric: exactly 1/2
  EXPECT_TRUE(std::isnan(regularized_incomplete_beta(0, 1, 0.5)));
  EXPECT_TRUE(std::isnan(regularized_incomplete_beta(1, 1, 1.5)));
}

TEST(StudentT, QuantilesMatchThePublishedTable) {
  // t_{0.975, df} (two-sided 95%) and t_{0.995, df} (two-sided 99%), 10 significant digits,
  // from the standard tables (NIST/SEMATECH e-Handbook 1.3.6.7.2; Abramowitz & Stegun 26.10).
  const struct {
    double df, t975, t995;
  } table[] = {
      {1, 12.70620474, 63.65674116},   {2, 4.302652730, 9.924843201},
      {3, 3.182446305, 5.840909310},   {4, 2.776445105, 4.604094871},
      {5, 2.570581836, 4.032142984},   {9, 2.262157163, 3.249835542},
      {10, 2.228138852, 3.169272673},  {30, 2.042272456, 2.749995654},
      {100, 1.983971519, 2.625890521},
  };
  for (const auto& row : table) {
    EXPECT_NEAR(student_t_quantile(0.975, row.df), row.t975, 1e-8 * row.t975) << row.df;
    EXPECT_NEAR(student_t_quantile(0.995, row.df), row.t995, 1e-8 * row.t995) << row.df;
    EXPECT_NEAR(student_t_quantile(0.025, row.df), -row.t975, 1e-8 * row.t975) << row.df;
    // The CDF at the tabulated quantile.
    EXPECT_NEAR(student_t_cdf(row.t975, row.df), 0.975, 1e-9) << row.df;
    EXPECT_NEAR(student_t_two_sided_p(row.t995, row.df), 0.01, 1e-10) << row.df;
  }
  // A large df approaches the normal quantile 1.959963985.
  EXPECT_NEAR(student_t_quantile(0.975, 1e7), 1.959963985, 1e-6);
}

TEST(StudentT, QuantilesMatchTheClosedFormsForOneTwoAndFourDegreesOfFreedom) {
  for (const double p : {0.0001, 0.01, 0.1, 0.3, 0.5, 0.6, 0.9, 0.95, 0.975, 0.999, 0.99999}) {
    // df = 1 (Cauchy): tan(π (p − 1/2)).
    const double t1 = std::tan(kPi * (p - 0.5));
    EXPECT_NEAR(student_t_quantile(p, 1), t1, 1e-9 * std::max(1.0, std::abs(t1))) << p;
    // df = 2: (2p − 1) / √(2 p (1 − p)).
    const double t2 = (2 * p - 1) / std::sqrt(2 * p * (1 - p));
    EXPECT_NEAR(student_t_quantile(p, 2), t2, 1e-10 * std::max(1.0, std::abs(t2))) << p;
    // df = 4 (Shaw 2006): α = 4p(1 − p), q = cos(acos(√α) / 3) / √α, t = sign · 2 √(q − 1).
    const double alpha = 4 * p * (1 - p);
    const double q = std::cos(std::acos(std::sqrt(alpha)) / 3) / std::sqrt(alpha);
    const double t4 = (p < 0.5 ? -2 : 2) * std::sqrt(q - 1);
    EXPECT_NEAR(student_t_quantile(p, 4), t4, 1e-9 * std::max(1.0, std::abs(t4))) << p;
  }
  EXPECT_EQ(student_t_quantile(0.5, 3), 0);
  EXPECT_EQ(student_t_quantile(1, 3), INFINITY);
  EXPECT_EQ(student_t_quantile(0, 3), -INFINITY);
  EXPECT_TRUE(std::isnan(student_t_quantile(1.5, 3)));
  EXPECT_TRUE(std::isnan(student_t_quantile(0.9, 0)));
}

TEST(StudentT, TwoSidedPValuesMatchTheClosedForms) {
  for (const double t : {0.0, 0.1, 1.0, 1.96, 3.3, 12.7, 100.0}) {
    // df = 1: 1 − (2/π) atan|t|; df = 2: 1 − |t| / √(2 + t²).
    EXPECT_NEAR(student_t_two_sided_p(t, 1), 1 - 2 / kPi * std::atan(t), 1e-13) << t;
    EXPECT_NEAR(student_t_two_sided_p(-t, 2), 1 - t / std::sqrt(2 + t * t), 1e-13) << t;
    EXPECT_NEAR(student_t_cdf(-t, 2), (1 - t / std::sqrt(2 + t * t)) / 2, 1e-13) << t;
  }
  EXPECT_EQ(student_t_two_sided_p(INFINITY, 3), 0);
}

TEST(PairedTTest, HandComputedExample) {
  // Differences 1, 2, 6: mean 3, deviations −2, −1, 3, sum of squares 14, variance 7,
  // standard error √(7/3), t = 3 / √(7/3) = √(27/7); df = 2, so p = 1 − t/√(2 + t²) =
  // 1 − √(27/41), and the 95% interval is 3 ± 4.302652730 · √(7/3).
  const PairedComparison c = compare_paired({1, 2, 6});
  EXPECT_EQ(c.n, 3);
  EXPECT_DOUBLE_EQ(c.mean, 3);
  EXPECT_NEAR(c.std, std::sqrt(7.0), 1e-14);
  EXPECT_NEAR(c.t, std::sqrt(27.0 / 7.0), 1e-13);
  EXPECT_NEAR(c.p_value, 1 - std::sqrt(27.0 / 41.0), 1e-12);
  EXPECT_NEAR(c.ci_low, 3 - 4.302652730 * std::sqrt(7.0 / 3.0), 1e-8);
  EXPECT_NEAR(c.ci_high, 3 + 4.302652730 * std::sqrt(7.0 / 3.0), 1e-8);
  EXPECT_TRUE(c.within_noise);  // [−3.57, 9.57]
}

TEST(PairedTTest, AClearDifferenceExcludesZero) {
  // Five seeds, differences −2, −3, −2.5, −3.5, −4: mean −3, SS = 1 + 0 + 0.25 + 0.25 + 1 =
  // 2.5, variance 0.625, se = √(0.125), t = −3/√0.125 = −8.485; df = 4: t_{0.975} =
  // 2.776445105, interval −3 ± 2.776445105 · √0.125 = [−3.982, −2.018].
  const PairedComparison c = compare_paired({-2, -3, -2.5, -3.5, -4});
  EXPECT_NEAR(c.ci_low, -3 - 2.776445105 * std::sqrt(0.125), 1e-8);
  EXPECT_NEAR(c.ci_high, -3 + 2.776445105 * std::sqrt(0.125), 1e-8);
  EXPECT_NEAR(c.t, -3 / std::sqrt(0.125), 1e-12);
  EXPECT_FALSE(c.within_noise);
  // p from the df = 4 CDF in closed form: P(T > t) = 1/2 − (3/4)(s − s³/3), s = t/√(4 + t²)
  // (for t > 0), so p = 2 · that.
  const double t = 3 / std::sqrt(0.125);
  const double s = t / std::sqrt(4 + t * t);
  EXPECT_NEAR(c.p_value, 2 * (0.5 - 0.75 * (s - s * s * s / 3)), 1e-12);
}

TEST(PairedTTest, EdgeCases) {
  const PairedComparison one = compare_paired({4.5});
  EXPECT_EQ(one.n, 1);
  EXPECT_EQ(one.mean, 4.5);
  EXPECT_TRUE(std::isnan(one.ci_low));
  EXPECT_TRUE(std::isnan(one.p_value));
  EXPECT_TRUE(one.within_noise);
  // Non-finite differences (a run without a result) are left out.
  const PairedComparison two = compare_paired({NAN, 1, 3});
  EXPECT_EQ(two.n, 2);
  EXPECT_EQ(two.mean, 2);
  // df = 1: 2 ± 12.70620474 · √2 / √2.
  EXPECT_NEAR(two.ci_high, 2 + 12.70620474, 1e-7);
  // Equal differences: no spread; the interval is the value.
  const PairedComparison same = compare_paired({0.5, 0.5, 0.5});
  EXPECT_EQ(same.ci_low, 0.5);
  EXPECT_EQ(same.ci_high, 0.5);
  EXPECT_EQ(same.p_value, 0);
  EXPECT_FALSE(same.within_noise);
  const PairedComparison zero = compare_paired({0, 0});
  EXPECT_EQ(zero.p_value, 1);
  EXPECT_TRUE(zero.within_noise);
  EXPECT_EQ(compare_paired({}).n, 0);
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::experiments
