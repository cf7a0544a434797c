// Initialisers: fans, gains, and sample statistics against the formulas (tolerances from n).
#include "framework/nn/init.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <ostream>
#include <vector>

#include <gtest/gtest.h>

#include "tests/support/allclose.h"

namespace rota::nn::init {
namespace ROTA_TEST_FILE_NS {

using rota::testing::allclose;

constexpr double kPi = 3.14159265358979323846;

// ---- statistics helpers ----
//
// Tolerances: every moment check allows 5 standard errors, estimated from the sample itself
// (SE(mean) = s / sqrt(n); SE(s) = sqrt((m4 - s^4) / n) / (2 s) by the delta method, valid for
// any distribution with a fourth moment). A 5-SE deviation has probability < 6e-7 under a
// correct sampler, so the check does not flake for any seed, while with n = 2^17 it is tight:
// 5 SE(s) is ~1% of s for a normal and ~0.6% for a uniform, far below the errors a wrong gain,
// fan or sqrt(3) factor would cause (>= 10%).

struct Sample {
  std::vector<double> values;
  double mean = 0, stddev = 0, m4 = 0, min = 0, max = 0;
};

Sample describe(const Tensor& t) {
  Sample s;
  s.values = t.to_double_vector();
  const double n = static_cast<double>(s.values.size());
  for (double v : s.values) s.mean += v;
  s.mean /= n;
  double m2 = 0;
  for (double v : s.values) {
    const double d = v - s.mean;
    m2 += d * d;
    s.m4 += d * d * d * d;
  }
  m2 /= n;
  s.m4 /= n;
  s.stddev = std::sqrt(m2);
  s.min = *std::min_element(s.values.begin(), s.values.end());
  s.max = *std::max_element(s.values.begin(), s.values.end());
  return s;
}

void expect_moments(const Sample& s, double mean, double stddev) {
  const double n = static_cast<double>(s.values.size());
  const double se_mean = s.stddev / std::sqrt(n);
  const double se_std = std::sqrt((s.m4 - std::pow(s.stddev, 4)) / n) / (2 * s.stddev);
  EXPECT_NEAR(s.mean, mean, 5 * se_mean) << "sample mean";
  EXPECT_NEAR(s.stddev, stddev, 5 * se_std) << "sample stddev";
}

double phi(double x) {
  return std::exp(-0.5 * x * x) / std::sqrt(2 * kPi);
}
double lower_cdf(double x) {
  return 0.5 * std::erfc(-x / std::sqrt(2.0));
}
double upper_cdf(double x) {
  return 0.5 * std::erfc(x / std::sqrt(2.0));
}

constexpr int64_t kRows = 256;  // 256 x 512 = 2^17 samples
constexpr int64_t kCols = 512;

// ---- fans and gains ----

TEST(Init, FansOfMatricesAndConvolutionShapes) {
  EXPECT_EQ(compute_fans({7, 5}).fan_in, 5);
  EXPECT_EQ(compute_fans({7, 5}).fan_out, 7);
  EXPECT_EQ(compute_fans({16, 8, 3, 3}).fan_in, 8 * 9);
  EXPECT_EQ(compute_fans({16, 8, 3, 3}).fan_out, 16 * 9);
  EXPECT_EQ(compute_fans({4, 2, 5}).fan_in, 10);
  EXPECT_THROW(compute_fans({5}), Error);
  Generator gen(1);
  EXPECT_THROW(xavier_uniform_(Tensor::empty({5}), gen), Error);
  EXPECT_THROW(kaiming_normal_(Tensor::empty({0, 3}), gen, FanMode::kFanOut), Error);
}

/// E[f(z)^2] for z ~ N(0, 1) by the midpoint rule on [-12, 12] (the tails beyond hold < 1e-30).
double second_moment(const std::function<double(double)>& f) {
  const int n = 200000;
  const double a = -12, h = 24.0 / n;
  double sum = 0;
  for (int i = 0; i < n; ++i) {
    const double z = a + (i + 0.5) * h;
    sum += f(z) * f(z) * phi(z);
  }
  return sum * h;
}

TEST(Init, GainsFollowTheSecondMomentRule) {
  EXPECT_DOUBLE_EQ(calculate_gain(Nonlinearity::kLinear), 1.0);
  EXPECT_DOUBLE_EQ(calculate_gain(Nonlinearity::kSigmoid), 1.0);
  EXPECT_DOUBLE_EQ(calculate_gain(Nonlinearity::kTanh), 5.0 / 3.0);
  EXPECT_DOUBLE_EQ(calculate_gain(Nonlinearity::kLeakyRelu, 0.2), std::sqrt(2.0 / 1.04));
  // relu and leaky_relu gains are 1/sqrt(E[f(z)^2]); gelu uses the same rule (documented).
  const double relu_moment = second_moment([](double z) { return z > 0 ? z : 0; });
  EXPECT_NEAR(calculate_gain(Nonlinearity::kRelu), 1 / std::sqrt(relu_moment), 1e-9);
  const double leaky_moment = second_moment([](double z) { return z > 0 ? z : 0.2 * z; });
  EXPECT_NEAR(calculate_gain(Nonlinearity::kLeakyRelu, 0.2), 1 / std::sqrt(leaky_moment), 1e-9);
  const double gelu_moment = second_moment([](double z) { return z * lower_cdf(z); });
  EXPECT_NEAR(calculate_gain(Nonlinearity::kGelu), 1 / std::sqrt(gelu_moment), 1e-9);
}

// ---- quantile ----

TEST(Init, NormalQuantileInvertsTheCdf) {
  std::vector<double> ps = {1e-300,  1e-200,  1e-100, 1e-50,    1e-20,     1e-10,    1e-5, 1e-3,
                            0.02425, 0.025,   0.1,    0.25,     0.4,       0.5,      0.6,  0.9,
                            0.975,   0.97575, 0.999,  1 - 1e-5, 1 - 1e-10, 1 - 1e-15};
  for (double p : ps) {
    const double x = normal_quantile(p);
    // Compare in the tail where the probability is small, relative to that probability.
    // Rounding x by half an ulp (|x| * 1.1e-16) moves log Phi by ~|x| times that near the tail,
    // hence the (1 + x^2) factor.
    const double tolerance = 8e-16 * (1 + x * x);
    if (p <= 0.5) {
      EXPECT_NEAR(lower_cdf(x) / p, 1.0, tolerance) << "p = " << p << " x = " << x;
    } else {
      EXPECT_NEAR(upper_cdf(x) / (1 - p), 1.0, tolerance) << "p = " << p << " x = " << x;
    }
  }
  EXPECT_EQ(normal_quantile(0.5), 0.0);
  EXPECT_THROW(normal_quantile(0.0), Error);
  EXPECT_THROW(normal_quantile(1.0), Error);
}

// ---- plain distributions ----

TEST(Init, NormalMomentsAndDtypeIndependence) {
  Generator gen(1);
  const Tensor t = normal_(Tensor::empty({kRows, kCols}, DType::kF64), gen, 0.5, 2.0);
  expect_moments(describe(t), 0.5, 2.0);
  // Same seed, f32 target: the same draws rounded to float.
  Generator gen32(1);
  const Tensor t32 = normal_(Tensor::empty({kRows, kCols}, DType::kF32), gen32, 0.5, 2.0);
  EXPECT_TRUE(allclose(t32, t.to(DType::kF32), 0, 0));
}

TEST(Init, UniformBoundsAndMoments) {
  Generator gen(2);
  const Tensor t = uniform_(Tensor::empty({kRows, kCols}, DType::kF64), gen, -1.5, 0.5);
  const Sample s = describe(t);
  EXPECT_GE(s.min, -1.5);
  EXPECT_LT(s.max, 0.5);
  // The extremes come close to the bounds: a gap of 1e-4 of the width at either end has
  // probability (1 - 1e-4)^n = e^-13.
  EXPECT_LT(s.min, -1.5 + 2e-4);
  EXPECT_GT(s.max, 0.5 - 2e-4);
  expect_moments(s, -0.5, 2.0 / std::sqrt(12.0));
}

TEST(Init, WritesThroughNonContiguousViews) {
  // Values go to the view's elements in the view's row-major order.
  Tensor base = zeros({6, 4}, DType::kF64);
  const Tensor view = base.transpose(0, 1);  // [4, 6], strided
  Generator gen(3);
  normal_(view, gen);
  Generator same(3);
  const Tensor expected = normal_(Tensor::empty({4, 6}, DType::kF64), same);
  EXPECT_TRUE(allclose(view, expected, 0, 0));
  EXPECT_TRUE(allclose(base, expected.transpose(0, 1), 0, 0));
}

TEST(Init, ConstantsAndRejectsIntegerTensors) {
  Tensor t = Tensor::empty({3, 2}, DType::kF32);
  EXPECT_TRUE(allclose(constant_(t, 0.25), full({3, 2}, 0.25), 0, 0));
  EXPECT_TRUE(allclose(zeros_(t), zeros({3, 2}), 0, 0));
  EXPECT_TRUE(allclose(ones_(t), ones({3, 2}), 0, 0));
  EXPECT_TRUE(allclose(t, ones({3, 2}), 0, 0));  // in place on the caller's tensor
  Generator gen(4);
  EXPECT_THROW(normal_(zeros({3}, DType::kI64), gen), Error);
  EXPECT_THROW(constant_(zeros({3}, DType::kI32), 1.0), Error);
  EXPECT_THROW(uniform_(t, gen, 1.0, 0.0), Error);
}

// ---- Xavier and Kaiming: the std (and bound) formulas with distinct fan_in / fan_out ----

TEST(Init, XavierUniformAndNormal) {
  const double fan_sum = kRows + kCols;
  Generator gen(5);
  const Sample u = describe(xavier_uniform_(Tensor::empty({kRows, kCols}, DType::kF64), gen, 1.5));
  const double bound = 1.5 * std::sqrt(6.0 / fan_sum);
  EXPECT_GE(u.min, -bound);
  EXPECT_LE(u.max, bound);
  EXPECT_GT(u.max, bound * (1 - 1e-3));
  expect_moments(u, 0.0, 1.5 * std::sqrt(2.0 / fan_sum));

  const Sample n = describe(xavier_normal_(Tensor::empty({kRows, kCols}, DType::kF64), gen, 2.0));
  expect_moments(n, 0.0, 2.0 * std::sqrt(2.0 / fan_sum));
}

TEST(Init, KaimingUniformDefaultsAndModes) {
  Generator gen(6);
  // Default: fan_in (512), leaky_relu with slope 0 -> gain sqrt(2), bound sqrt(6 / fan_in).
  const Sample u = describe(kaiming_uniform_(Tensor::empty({kRows, kCols}, DType::kF64), gen));
  const double bound = std::sqrt(6.0 / kCols);
  EXPECT_GE(u.min, -bound);
  EXPECT_LE(u.max, bound);
  EXPECT_GT(u.max, bound * (1 - 1e-3));
  expect_moments(u, 0.0, std::sqrt(2.0 / kCols));
  // fan_out (256) with tanh.
  const Sample t = describe(kaiming_uniform_(Tensor::empty({kRows, kCols}, DType::kF64), gen,
                                             FanMode::kFanOut, Nonlinearity::kTanh));
  expect_moments(t, 0.0, (5.0 / 3.0) / std::sqrt(static_cast<double>(kRows)));
}

TEST(Init, KaimingNormalOnMatricesAndConvolutionShapes) {
  Generator gen(7);
  const Sample relu = describe(kaiming_normal_(Tensor::empty({kRows, kCols}, DType::kF64), gen,
                                               FanMode::kFanIn, Nonlinearity::kRelu));
  expect_moments(relu, 0.0, std::sqrt(2.0 / kCols));
  // [out 128, in 64, 4, 4]: fan_out = 128 * 16 = 2048.
  const Sample leaky = describe(kaiming_normal_(Tensor::empty({128, 64, 4, 4}, DType::kF64), gen,
                                                FanMode::kFanOut, Nonlinearity::kLeakyRelu, 0.2));
  expect_moments(leaky, 0.0, std::sqrt(2.0 / 1.04) / std::sqrt(2048.0));
  const Sample gelu = describe(kaiming_normal_(Tensor::empty({kRows, kCols}, DType::kF64), gen,
                                               FanMode::kFanIn, Nonlinearity::kGelu));
  expect_moments(gelu, 0.0, calculate_gain(Nonlinearity::kGelu) / std::sqrt(1.0 * kCols));
}

// ---- truncated normal ----

struct TruncCase {
  double mean, stddev, low, high;
  friend void PrintTo(const TruncCase& c, std::ostream* os) {
    *os << "N(" << c.mean << ", " << c.stddev << "^2) on [" << c.low << ", " << c.high << "]";
  }
};

class TruncNormal : public ::testing::TestWithParam<TruncCase> {};

/// CDF of the truncated law at x, written in the tail where its masses are precise.
double truncated_cdf(const TruncCase& c, double x) {
  const double a = (c.low - c.mean) / c.stddev, b = (c.high - c.mean) / c.stddev;
  const double z = (x - c.mean) / c.stddev;
  if (a > 0) return (upper_cdf(a) - upper_cdf(z)) / (upper_cdf(a) - upper_cdf(b));
  return (lower_cdf(z) - lower_cdf(a)) / (lower_cdf(b) - lower_cdf(a));
}

TEST_P(TruncNormal, BoundsMomentsAndDistribution) {
  const TruncCase c = GetParam();
  Generator gen(8);
  const Sample s = describe(trunc_normal_(Tensor::empty({kRows, kCols}, DType::kF64), gen, c.mean,
                                          c.stddev, c.low, c.high));
  EXPECT_GE(s.min, c.low);
  EXPECT_LE(s.max, c.high);
  // No clamping: no sample sits exactly on a bound (clamping would put several % there).
  EXPECT_EQ(std::count(s.values.begin(), s.values.end(), c.low), 0);
  EXPECT_EQ(std::count(s.values.begin(), s.values.end(), c.high), 0);

  // Analytic moments: with alpha, beta the standardised bounds and Z the mass between them,
  //   mean = mu + sigma (phi(a) - phi(b)) / Z
  //   var  = sigma^2 [1 + (a phi(a) - b phi(b)) / Z - ((phi(a) - phi(b)) / Z)^2].
  const double a = (c.low - c.mean) / c.stddev, b = (c.high - c.mean) / c.stddev;
  const double z = a > 0 ? upper_cdf(a) - upper_cdf(b) : lower_cdf(b) - lower_cdf(a);
  const double r = (phi(a) - phi(b)) / z;
  const double mean = c.mean + c.stddev * r;
  const double var = c.stddev * c.stddev * (1 + (a * phi(a) - b * phi(b)) / z - r * r);
  expect_moments(s, mean, std::sqrt(var));

  // Kolmogorov-Smirnov distance to the exact CDF. By the DKW inequality
  // P(sqrt(n) D > 2.7) <= 2 exp(-2 * 2.7^2) < 1e-6.
  std::vector<double> sorted = s.values;
  std::sort(sorted.begin(), sorted.end());
  const double n = static_cast<double>(sorted.size());
  double d = 0;
  for (size_t i = 0; i < sorted.size(); ++i) {
    const double f = truncated_cdf(c, sorted[i]);
    d = std::max({d, std::abs(f - i / n), std::abs(f - (i + 1) / n)});
  }
  EXPECT_LT(d, 2.7 / std::sqrt(n));
}

INSTANTIATE_TEST_SUITE_P(
    Init, TruncNormal,
    ::testing::Values(TruncCase{0.0, 1.0, -2.0, 2.0},     // PyTorch's default bounds
                      TruncCase{1.0, 0.5, 0.5, 3.0},      // asymmetric: [-1, +4] std
                      TruncCase{0.0, 0.02, -0.04, 0.04},  // transformer init: +-2 std
                      TruncCase{0.0, 1.0, 3.0, 5.0},      // upper tail only (mirrored path)
                      TruncCase{2.0, 1.0, -6.0, -4.0}));  // far lower tail: [-8, -6] std

TEST(Init, TruncNormalRejectsBadArguments) {
  Generator gen(9);
  Tensor t = Tensor::empty({4});
  EXPECT_THROW(trunc_normal_(t, gen, 0, 1, 1, 1), Error);
  EXPECT_THROW(trunc_normal_(t, gen, 0, 0, -1, 1), Error);
  EXPECT_THROW(trunc_normal_(t, gen, 0, 1, 50, 60), Error);  // no mass in double
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::nn::init
