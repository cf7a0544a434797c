// Initialisers: draw values in double from the generator, then copy into the target tensor.
#include "framework/nn/init.h"

#include <cmath>
#include <functional>
#include <vector>

namespace rota::nn::init {

namespace {

constexpr double kSqrt2 = 1.41421356237309504880;
constexpr double kSqrt3 = 1.73205080756887729353;
constexpr double kPi = 3.14159265358979323846;

void check_floating(const Tensor& tensor, const char* op) {
  ROTA_CHECK(tensor.defined(), "{}: tensor is undefined", op);
  ROTA_CHECK(is_floating(tensor.dtype()), "{}: dtype {} is not floating ({})", op,
             dtype_name(tensor.dtype()), shape_str(tensor.shape()));
}

/// Draws numel values with `sample` (row-major order) and writes them into `tensor`, whatever
/// its strides and dtype: in place when it is contiguous (no buffer of the whole tensor: a
/// large embedding is initialised in its own memory), else through one double buffer.
Tensor fill_with(const Tensor& tensor, const char* op, const std::function<double()>& sample) {
  check_floating(tensor, op);
  if (tensor.is_contiguous()) {
    Tensor target = tensor;  // shares storage
    fill_elements(target, sample);
    return target;
  }
  std::vector<double> values(static_cast<size_t>(tensor.numel()));
  for (auto& v : values) v = sample();
  Tensor target = tensor;  // shares storage
  target.copy_from(tensor_from(values, tensor.shape(), DType::kF64));
  return target;
}

/// Standard normal CDF; erfc keeps full relative precision in the lower tail.
double normal_cdf(double x) {
  return 0.5 * std::erfc(-x / kSqrt2);
}

int64_t fan_for(const Tensor& tensor, FanMode mode, const char* op) {
  check_floating(tensor, op);
  const Fans fans = compute_fans(tensor.shape());
  const int64_t fan = mode == FanMode::kFanIn ? fans.fan_in : fans.fan_out;
  ROTA_CHECK(fan > 0, "{}: tensor {} has a zero fan", op, shape_str(tensor.shape()));
  return fan;
}

}  // namespace

Fans compute_fans(const Shape& shape) {
  ROTA_CHECK(shape.size() >= 2, "compute_fans: need a weight of rank >= 2 ([out, in, ...]), got {}",
             shape_str(shape));
  int64_t receptive_field = 1;
  for (size_t d = 2; d < shape.size(); ++d) receptive_field *= shape[d];
  return Fans{shape[1] * receptive_field, shape[0] * receptive_field};
}

double calculate_gain(Nonlinearity nonlinearity, double param) {
  switch (nonlinearity) {
    case Nonlinearity::kLinear:
    case Nonlinearity::kSigmoid:
      return 1.0;
    case Nonlinearity::kTanh:
      return 5.0 / 3.0;
    case Nonlinearity::kRelu:
      return kSqrt2;
    case Nonlinearity::kLeakyRelu:
      return std::sqrt(2.0 / (1.0 + param * param));
    case Nonlinearity::kGelu:
      // 1 / sqrt(E[gelu(z)^2]), E[z^2 Phi(z)^2] = 1/3 + 1/(2 pi sqrt 3) for z ~ N(0, 1).
      return 1.0 / std::sqrt(1.0 / 3.0 + 1.0 / (2.0 * kPi * kSqrt3));
  }
  fail("calculate_gain: unknown nonlinearity");
}

double normal_quantile(double p) {
  ROTA_CHECK(p > 0.0 && p < 1.0, "normal_quantile: p = {} is outside (0, 1)", p);
  // Work in the lower half, where Phi (via erfc) has full relative precision; 1 - p is exact
  // for p >= 1/2 (Sterbenz), so the upper half loses nothing by symmetry.
  if (p > 0.5) return -normal_quantile(1.0 - p);
  // Acklam's rational approximation (relative error < 1.2e-9): a central rational function in
  // q = p - 1/2 and tail functions in sqrt(-2 log p).
  static constexpr double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,
                                 -2.759285104469687e+02, 1.383577518672690e+02,
                                 -3.066479806614716e+01, 2.506628277459239e+00};
  static constexpr double b[] = {-5.447609879822406e+01, 1.615858368580409e+02,
                                 -1.556989798598866e+02, 6.680131188771972e+01,
                                 -1.328068155288572e+01};
  static constexpr double c[] = {-7.784894002430293e-03, -3.223964580411365e-01,
                                 -2.400758277161838e+00, -2.549732539343734e+00,
                                 4.374664141464968e+00,  2.938163982698783e+00};
  static constexpr double d[] = {7.784695709041462e-03, 3.224671290700398e-01,
                                 2.445134137142996e+00, 3.754408661907416e+00};
  constexpr double kLowTail = 0.02425;
  double x;
  if (p < kLowTail) {
    const double q = std::sqrt(-2.0 * std::log(p));
    x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1.0);
  } else {
    const double q = p - 0.5;
    const double r = q * q;
    x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
        (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1.0);
  }
  // One Halley step on f(x) = Phi(x) - p brings the error to rounding level (cubic
  // convergence from 1e-9). Phi'(x) = pdf(x), Phi''(x) = -x pdf(x).
  // u = (Phi(x) - p) / pdf(x), with 1 / pdf(x) = p^-1 * exp(log p + x^2/2 + log sqrt(2 pi))
  // so it cannot overflow in the far tail (x^2 / 2 > 709 when p < 1e-308).
  const double e = (normal_cdf(x) - p) / p;
  const double u = e * std::exp(std::log(p) + 0.5 * x * x + 0.5 * std::log(2.0 * kPi));
  return x - u / (1.0 + 0.5 * x * u);
}

Tensor normal_(const Tensor& tensor, Generator& gen, double mean, double stddev) {
  ROTA_CHECK(stddev >= 0.0 && std::isfinite(stddev) && std::isfinite(mean),
             "normal_: need a finite mean and stddev >= 0, got mean {} stddev {}", mean, stddev);
  return fill_with(tensor, "normal_", [&] { return mean + stddev * gen.next_normal(); });
}

Tensor uniform_(const Tensor& tensor, Generator& gen, double low, double high) {
  ROTA_CHECK(std::isfinite(low) && std::isfinite(high) && low <= high,
             "uniform_: need finite low <= high, got [{}, {})", low, high);
  return fill_with(tensor, "uniform_", [&] { return low + (high - low) * gen.next_double(); });
}

Tensor constant_(const Tensor& tensor, double value) {
  check_floating(tensor, "constant_");
  Tensor target = tensor;
  target.fill(value);
  return target;
}

Tensor zeros_(const Tensor& tensor) {
  return constant_(tensor, 0.0);
}
Tensor ones_(const Tensor& tensor) {
  return constant_(tensor, 1.0);
}

Tensor xavier_uniform_(const Tensor& tensor, Generator& gen, double gain) {
  check_floating(tensor, "xavier_uniform_");
  const Fans fans = compute_fans(tensor.shape());
  const double stddev = gain * std::sqrt(2.0 / static_cast<double>(fans.fan_in + fans.fan_out));
  const double bound = kSqrt3 * stddev;  // U[-b, b] has std b / sqrt(3)
  return uniform_(tensor, gen, -bound, bound);
}

Tensor xavier_normal_(const Tensor& tensor, Generator& gen, double gain) {
  check_floating(tensor, "xavier_normal_");
  const Fans fans = compute_fans(tensor.shape());
  const double stddev = gain * std::sqrt(2.0 / static_cast<double>(fans.fan_in + fans.fan_out));
  return normal_(tensor, gen, 0.0, stddev);
}

Tensor kaiming_uniform_(const Tensor& tensor, Generator& gen, FanMode mode,
                        Nonlinearity nonlinearity, double negative_slope) {
  const int64_t fan = fan_for(tensor, mode, "kaiming_uniform_");
  const double stddev =
      calculate_gain(nonlinearity, negative_slope) / std::sqrt(static_cast<double>(fan));
  const double bound = kSqrt3 * stddev;
  return uniform_(tensor, gen, -bound, bound);
}

Tensor kaiming_normal_(const Tensor& tensor, Generator& gen, FanMode mode,
                       Nonlinearity nonlinearity, double negative_slope) {
  const int64_t fan = fan_for(tensor, mode, "kaiming_normal_");
  const double stddev =
      calculate_gain(nonlinearity, negative_slope) / std::sqrt(static_cast<double>(fan));
  return normal_(tensor, gen, 0.0, stddev);
}

Tensor trunc_normal_(const Tensor& tensor, Generator& gen, double mean, double stddev, double low,
                     double high) {
  ROTA_CHECK(stddev > 0.0 && std::isfinite(stddev) && std::isfinite(mean),
             "trunc_normal_: need a finite mean and stddev > 0, got mean {} stddev {}", mean,
             stddev);
  ROTA_CHECK(low < high, "trunc_normal_: empty interval [{}, {}]", low, high);
  // Standardised bounds; an interval entirely above 0 is mirrored below 0 (sample -x), since
  // Phi(alpha) near 1 would lose the precision that erfc keeps near 0.
  double alpha = (low - mean) / stddev;
  double beta = (high - mean) / stddev;
  const bool mirrored = alpha > 0.0;
  if (mirrored) {
    const double t = alpha;
    alpha = -beta;
    beta = -t;
  }
  const double cdf_low = normal_cdf(alpha);
  const double cdf_high = normal_cdf(beta);
  ROTA_CHECK(cdf_high > cdf_low,
             "trunc_normal_: [{}, {}] holds no probability mass of N({}, {}^2) in double", low,
             high, mean, stddev);
  return fill_with(tensor, "trunc_normal_", [&] {
    // Inverse-CDF sampling: Phi^-1 of a uniform over [Phi(alpha), Phi(beta)) has exactly the
    // truncated law. A draw that rounding pushes outside the interval (or onto p = 0) is
    // redrawn rather than clamped.
    for (int attempt = 0; attempt < 1000; ++attempt) {
      const double p = cdf_low + (cdf_high - cdf_low) * gen.next_double();
      if (!(p > 0.0 && p < 1.0)) continue;
      const double z = normal_quantile(p);
      const double value = mean + stddev * (mirrored ? -z : z);
      if (value >= low && value <= high) return value;
    }
    fail("trunc_normal_: [{}, {}] is too narrow for N({}, {}^2) to be sampled in double", low, high,
         mean, stddev);
  });
}

}  // namespace rota::nn::init
