// Paired comparisons over seeds: Student's t distribution (CDF, quantile, two-sided p-value)
// from the regularized incomplete beta function, and the paired t-test with its confidence
// interval.
#pragma once

#include <vector>

namespace rota::experiments {

/// The regularized incomplete beta function I_x(a, b) for a, b > 0 and x in [0, 1], by the
/// continued fraction of Numerical Recipes (modified Lentz), relative error about 1e-14. NaN
/// outside the domain.
double regularized_incomplete_beta(double a, double b, double x);

/// P(T <= t) for Student's t with `df` > 0 degrees of freedom:
/// 1 − I_{df/(df+t²)}(df/2, 1/2) / 2 for t >= 0, and by symmetry below 0.
double student_t_cdf(double t, double df);

/// The t with P(T <= t) = p (0 < p < 1) for `df` degrees of freedom, by bisection on
/// student_t_cdf until the bracket stops shrinking (machine precision). ±infinity at p = 1 / 0,
/// NaN outside [0, 1] or for df <= 0.
double student_t_quantile(double p, double df);

/// P(|T| >= |t|) = I_{df/(df+t²)}(df/2, 1/2): the two-sided p-value of a t statistic.
double student_t_two_sided_p(double t, double df);

/// A paired comparison of a variant with its baseline over the seeds both finished.
struct PairedComparison {
  int n = 0;           // pairs (seeds)
  double mean = 0;     // mean of the differences (variant − baseline)
  double std = 0;      // their sample standard deviation (NaN below 2 pairs)
  double ci_low = 0;   // the confidence interval of the mean difference:
  double ci_high = 0;  //   mean ± t_{(1+confidence)/2, n−1} · std / √n (NaN below 2 pairs)
  double t = 0;        // mean / (std / √n); ±infinity when every difference is the same
  double p_value = 0;  // two-sided paired t-test (NaN below 2 pairs; 1 when all are 0)
  bool within_noise = true;  // the interval contains 0 (always with fewer than 2 pairs)
};

/// The paired t-test of `differences` (one per seed, variant − baseline; non-finite values are
/// left out) with a `confidence` interval (default 95%, df = n − 1). When every difference is
/// equal the interval is that value and p is 0 (1 when they are all 0).
PairedComparison compare_paired(const std::vector<double>& differences, double confidence = 0.95);

}  // namespace rota::experiments
