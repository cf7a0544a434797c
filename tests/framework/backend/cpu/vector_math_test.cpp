// backend/vector_math: every f32 kernel against double-precision libm over dense sweeps and
// special values, separately for each instruction-set build this CPU can run.
#include "framework/backend/cpu/vector_math.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <xmmintrin.h>

#include "framework/backend/cpu/parallel.h"
#include "framework/backend/primitives/elementwise.h"
#include "framework/tensor/random.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

namespace vm = backend::vecmath;
using vm::Isa;
using vm::Kernels;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kInvSqrt2 = 0.70710678118654752440084436210485;
constexpr double kInvSqrt2Pi = 0.39894228040143267793994605993438;
constexpr double kSqrt2OverPi = 0.79788456080286535587989211986876;

// Sets MXCSR's flush-to-zero and denormals-are-zero bits on this thread for a scope: the
// kernels below run on the calling thread. Other tests (and backend::set_num_threads) turn
// them on, as training does.
class DenormalMode {
 public:
  explicit DenormalMode(bool flush) : saved_(_mm_getcsr()) {
    constexpr unsigned kFtzDaz = 0x8040;
    _mm_setcsr(flush ? (saved_ | kFtzDaz) : (saved_ & ~kFtzDaz));
  }
  ~DenormalMode() { _mm_setcsr(saved_); }
  DenormalMode(const DenormalMode&) = delete;
  DenormalMode& operator=(const DenormalMode&) = delete;

 private:
  unsigned saved_;
};

// ---- references: double-precision libm, written for accuracy rather than like the kernels ----

double sigmoid_ref(double x) {
  return 1.0 / (1.0 + std::exp(-x));
}
// Phi(x) through erfc, which keeps its relative precision in the left tail.
double normal_cdf_ref(double x) {
  return 0.5 * std::erfc(-x * kInvSqrt2);
}
double gelu_tanh_inner(double x) {
  return kSqrt2OverPi * (x + 0.044715 * x * x * x);
}
double elu_ref(double x, double alpha) {
  return x > 0 ? x : alpha * std::expm1(x);
}

// ---- error measures ----

// The spacing of floats at |v|: one ulp of a float result near v (2^-149 among subnormals).
double ulp_at(double v) {
  const double a = std::fabs(v);
  if (a < 0x1p-126) return 0x1p-149;
  int e = 0;
  std::frexp(a, &e);  // a in [2^(e-1), 2^e)
  return std::ldexp(1.0, e - 1 - 23);
}

enum class Metric {
  // |y - f(x)| in ulps of f(x).
  kUlp,
  // For f(x) = x g(x) with a gate g: ulps of max(|f(x)|, |x| g_min), where g_min is the gate
  // value below which the float formula only has absolute precision (the precision of g, not
  // of the product, is what is measured there).
  kGateUlp,
  // ulps of max(|f(x)|, 1/2): relative above 1/2, absolute (units of 2^-24) below, for
  // derivatives of order 1 that cross zero, where a relative measure means nothing.
  kAbsoluteBelowHalf,
};

struct Case {
  std::string name;
  std::function<void(const Kernels&, const float* x, float* y, int64_t n)> run;
  std::function<double(double)> reference;
  Metric metric = Metric::kUlp;
  double gate_min = 0;  // for kGateUlp
  double lo = 0;        // linear sweep range
  double hi = 0;
  std::vector<double> edges;  // range-reduction and cut-off points, swept float by float
  // The asserted bound in the metric's units: the largest error found on this machine over
  // all builds (printed by the test), rounded up to the next 0.25.
  double bound = 0;
};

// Error of y against the exact ref in the case's units; +inf for a wrong special value (NaN
// where the result is a number or the other way round, a wrong infinity, the sign of a zero).
double error_of(const Case& c, float x, float y, double ref) {
  if (std::isnan(ref)) return std::isnan(y) ? 0 : kInf;
  if (std::isnan(y)) return kInf;
  const float rounded = static_cast<float>(ref);
  if (std::isinf(rounded) || std::isinf(y)) return y == rounded ? 0 : kInf;
  if (ref == 0 && y == 0) return std::signbit(ref) == std::signbit(y) ? 0 : kInf;
  double unit = 0;
  switch (c.metric) {
    case Metric::kUlp:
      unit = ulp_at(ref);
      break;
    case Metric::kGateUlp:
      unit = ulp_at(std::max(std::fabs(ref), std::fabs(static_cast<double>(x)) * c.gate_min));
      break;
    case Metric::kAbsoluteBelowHalf:
      unit = ulp_at(std::max(std::fabs(ref), 0.5));
      break;
  }
  return std::fabs(static_cast<double>(y) - ref) / unit;
}

// ---- the cases ----

using Forward = void (*Kernels::*)(const float*, float*, int64_t);
using Backward = void (*Kernels::*)(const float*, const float*, float*, int64_t);

Case forward_case(std::string name, Forward kernel, std::function<double(double)> reference) {
  Case c;
  c.name = std::move(name);
  c.run = [kernel](const Kernels& k, const float* x, float* y, int64_t n) { (k.*kernel)(x, y, n); };
  c.reference = std::move(reference);
  return c;
}

// grad_y = 1, so grad_x is the derivative itself.
Case backward_case(std::string name, Backward kernel, std::function<double(double)> reference) {
  Case c;
  c.name = std::move(name);
  c.run = [kernel](const Kernels& k, const float* x, float* y, int64_t n) {
    const std::vector<float> ones(static_cast<size_t>(n), 1.0f);
    (k.*kernel)(x, ones.data(), y, n);
  };
  c.reference = std::move(reference);
  c.metric = Metric::kAbsoluteBelowHalf;
  return c;
}

Case elu_case(std::string name, double alpha) {
  Case c;
  c.name = std::move(name);
  c.run = [alpha](const Kernels& k, const float* x, float* y, int64_t n) {
    k.elu(x, y, n, static_cast<float>(alpha));
  };
  c.reference = [alpha](double x) { return elu_ref(x, alpha); };
  return c;
}

std::vector<Case> make_cases() {
  const double ln2 = std::log(2.0);
  std::vector<Case> cases;

  Case c = forward_case("exp", &Kernels::exp, [](double x) { return std::exp(x); });
  c.lo = -106, c.hi = 90;
  // the underflow cut, exp = 2^-150 and 2^-149, the last normal, the overflow threshold
  c.edges = {-104.0, 150 * -ln2, 149 * -ln2, 126 * -ln2, 128 * ln2, 0.5 * ln2, -0.5 * ln2};
  c.bound = 1.25;  // measured: 1.010
  cases.push_back(c);

  c = forward_case("expm1", &Kernels::expm1, [](double x) { return std::expm1(x); });
  c.lo = -20, c.hi = 90;
  c.edges = {-17.5, 25 * -ln2, 24.5 * ln2, -24.5 * ln2, 0.5 * ln2, -0.5 * ln2, 128 * ln2};
  c.bound = 1.75;  // measured: 1.584
  cases.push_back(c);

  c = forward_case("erf", &Kernels::erf, [](double x) { return std::erf(x); });
  c.lo = -5, c.hi = 5;
  c.edges = {-1.0, 1.0, -4.0, 4.0, 3.92, -3.92};
  c.bound = 1.5;  // measured: 1.275
  cases.push_back(c);

  c = forward_case("tanh", &Kernels::tanh, [](double x) { return std::tanh(x); });
  c.lo = -10, c.hi = 10;
  c.edges = {-0.75, 0.75, 9.01, -9.01};
  c.bound = 1.25;  // measured: 1.051
  cases.push_back(c);

  c = forward_case("sigmoid", &Kernels::sigmoid, sigmoid_ref);
  c.lo = -110, c.hi = 20;
  c.edges = {0.0, -87.34, -103.28, 17.33};
  c.bound = 2.5;  // measured: 2.310
  cases.push_back(c);

  c = forward_case("silu", &Kernels::silu, [](double x) { return x * sigmoid_ref(x); });
  c.metric = Metric::kGateUlp;
  c.gate_min = 0x1p-126;  // sigmoid keeps relative precision down to FLT_MIN
  c.lo = -110, c.hi = 20;
  c.edges = {0.0, -87.34};
  c.bound = 3.0;  // measured: 2.969
  cases.push_back(c);

  cases.push_back(elu_case("elu", 1.0));
  cases.back().lo = -20, cases.back().hi = 5;
  cases.back().edges = {0.0, -17.5, -0.5 * ln2};
  cases.back().bound = 1.0;  // measured: 0.902
  cases.push_back(elu_case("elu_alpha_0_3", 0.3));
  cases.back().lo = -20, cases.back().hi = 5;
  cases.back().edges = {0.0, -17.5, -0.5 * ln2};
  cases.back().bound = 2.0;  // measured: 1.938

  c = forward_case("one_plus_elu", &Kernels::one_plus_elu,
                   [](double x) { return x > 0 ? x + 1 : std::exp(x); });
  c.lo = -106, c.hi = 5;
  c.edges = {0.0};
  c.bound = 1.25;  // measured: 1.009
  cases.push_back(c);

  // (1 + erf) / 2 is formed in float as in libm-based code: below Phi = 1/2 it carries
  // absolute precision only, hence g_min = 1/2.
  c = forward_case("gelu_erf", &Kernels::gelu_erf, [](double x) { return x * normal_cdf_ref(x); });
  c.metric = Metric::kGateUlp;
  c.gate_min = 0.5;
  c.lo = -10, c.hi = 10;
  c.edges = {-std::sqrt(2.0), std::sqrt(2.0), 0.0};
  c.bound = 1.75;  // measured: 1.587
  cases.push_back(c);

  // In the left tail gelu_tanh ~ x e^{2u} is ill-conditioned (relative error 2|u| times that
  // of u = sqrt(2/pi) (x + 0.044715 x^3), which float cannot form exactly), so relative
  // precision is only asked for from sigmoid(2u) = 1/2 on, as for gelu_erf.
  c = forward_case("gelu_tanh", &Kernels::gelu_tanh,
                   [](double x) { return x / (1.0 + std::exp(-2.0 * gelu_tanh_inner(x))); });
  c.metric = Metric::kGateUlp;
  c.gate_min = 0.5;
  c.lo = -10, c.hi = 10;
  c.edges = {0.0};
  c.bound = 2.25;  // measured: 2.208
  cases.push_back(c);

  c = backward_case("silu_backward", &Kernels::silu_backward, [](double x) {
    const double s = sigmoid_ref(x);
    return s * (1.0 + x * (1.0 - s));
  });
  c.lo = -110, c.hi = 30;
  c.edges = {0.0};
  c.bound = 3.25;  // measured: 3.075
  cases.push_back(c);

  c = backward_case("gelu_erf_backward", &Kernels::gelu_erf_backward, [](double x) {
    return normal_cdf_ref(x) + x * kInvSqrt2Pi * std::exp(-0.5 * x * x);
  });
  c.lo = -10, c.hi = 10;
  c.edges = {-std::sqrt(2.0), std::sqrt(2.0), 0.0};
  c.bound = 1.75;  // measured: 1.682
  cases.push_back(c);

  c = backward_case("gelu_tanh_backward", &Kernels::gelu_tanh_backward, [](double x) {
    const double t = std::tanh(gelu_tanh_inner(x));
    const double d_inner = kSqrt2OverPi * (1.0 + 3.0 * 0.044715 * x * x);
    return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * d_inner;
  });
  c.lo = -10, c.hi = 10;
  c.edges = {0.0};
  c.bound = 3.0;  // measured: 2.837
  cases.push_back(c);
  return cases;
}

const std::vector<Case>& all_cases() {
  static const std::vector<Case> cases = make_cases();
  return cases;
}

// Inputs of a case: special values; every 509th float of either sign (all binades, from the
// subnormals to FLT_MAX); a 2^21-point grid over [lo, hi]; 4096 consecutive floats on either
// side of every edge.
std::vector<float> sweep_inputs(const Case& c) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> x = {0.0f,
                          -0.0f,
                          inf,
                          -inf,
                          std::numeric_limits<float>::quiet_NaN(),
                          -std::numeric_limits<float>::quiet_NaN(),
                          std::numeric_limits<float>::denorm_min(),
                          -std::numeric_limits<float>::denorm_min(),
                          std::numeric_limits<float>::min(),
                          -std::numeric_limits<float>::min(),
                          std::numeric_limits<float>::max(),
                          -std::numeric_limits<float>::max(),
                          1.0f,
                          -1.0f};
  for (uint32_t bits = 0; bits < 0x7f800000u; bits += 509) {
    x.push_back(std::bit_cast<float>(bits));
    x.push_back(std::bit_cast<float>(bits | 0x80000000u));
  }
  constexpr int kGrid = 1 << 21;
  for (int i = 0; i <= kGrid; ++i) {
    x.push_back(static_cast<float>(c.lo + (c.hi - c.lo) * i / kGrid));
  }
  for (double edge : c.edges) {
    float up = static_cast<float>(edge);
    float down = up;
    for (int i = 0; i < 4096; ++i) {
      x.push_back(up);
      x.push_back(down);
      up = std::nextafter(up, inf);
      down = std::nextafter(down, -inf);
    }
  }
  return x;
}

struct Sweep {
  std::vector<float> x;
  std::vector<double> reference;
};

// Inputs and references once per case, shared by the builds.
const Sweep& sweep_of(const Case& c) {
  static std::map<std::string, Sweep> sweeps;
  auto it = sweeps.find(c.name);
  if (it != sweeps.end()) return it->second;
  const DenormalMode ieee(false);
  Sweep s;
  s.x = sweep_inputs(c);
  s.reference.resize(s.x.size());
  for (size_t i = 0; i < s.x.size(); ++i) s.reference[i] = c.reference(s.x[i]);
  return sweeps.emplace(c.name, std::move(s)).first->second;
}

std::vector<Isa> supported_isas() {
  std::vector<Isa> isas;
  for (Isa isa : {Isa::kPortable, Isa::kAvx2, Isa::kAvx512}) {
    if (vm::isa_supported(isa)) isas.push_back(isa);
  }
  return isas;
}

// ---- accuracy per (case, build) ----

class VectorMathAccuracy : public ::testing::TestWithParam<std::tuple<size_t, Isa>> {
 protected:
  // The test's own arithmetic (references, float-to-double conversions) must see subnormals.
  const DenormalMode ieee_{false};

  const Case& test_case() const { return all_cases()[std::get<0>(GetParam())]; }
  const Kernels& kernels() const { return vm::kernels(std::get<1>(GetParam())); }

  // Worst error of y (the kernel's output for x) against ref; prints it and checks the bound.
  void expect_within_bound(const std::vector<float>& x, const std::vector<float>& y,
                           const std::vector<double>& ref, const char* mode) const {
    const Case& c = test_case();
    double worst = 0;
    size_t at = 0;
    for (size_t i = 0; i < y.size(); ++i) {
      const double e = error_of(c, x[i], y[i], ref[i]);
      if (!(e <= worst)) {
        worst = e;
        at = i;
      }
    }
    std::printf("%s [%s, %s]: max error %.3f over %zu inputs, at x = %.9g\n", c.name.c_str(),
                vm::isa_name(kernels().isa), mode, worst, y.size(), x[at]);
    EXPECT_LE(worst, c.bound) << c.name << " [" << vm::isa_name(kernels().isa) << ", " << mode
                              << "] at x = " << x[at] << " (bits 0x" << std::hex
                              << std::bit_cast<uint32_t>(x[at]) << std::dec << "): got " << y[at]
                              << ", exact " << ref[at];
  }
};

// IEEE arithmetic: subnormal inputs and results are computed, not flushed.
TEST_P(VectorMathAccuracy, WithinBoundOfDoubleLibm) {
  const Sweep& s = sweep_of(test_case());
  std::vector<float> y(s.x.size());
  test_case().run(kernels(), s.x.data(), y.data(), static_cast<int64_t>(y.size()));
  expect_within_bound(s.x, y, s.reference, "ieee");
}

// As in training (backend::flush_denormals): subnormal inputs read as 0 and subnormal results
// become 0. Against the exact value at the flushed input, results from 2^-100 up (and all
// results of the absolute measure) keep their bound; below 2^-100, where a flushed
// intermediate (e^x in silu, sigmoid) can take the result to 0, they must stay below 2^-99.
TEST_P(VectorMathAccuracy, KeepsItsBoundUnderFlushToZero) {
  const Case& c = test_case();
  const Sweep& s = sweep_of(c);
  std::vector<float> y(s.x.size());
  {
    const DenormalMode flush(true);
    c.run(kernels(), s.x.data(), y.data(), static_cast<int64_t>(y.size()));
  }
  std::vector<float> x_read(s.x.size());
  std::vector<double> ref(s.x.size());
  for (size_t i = 0; i < s.x.size(); ++i) {
    const bool subnormal = std::fpclassify(s.x[i]) == FP_SUBNORMAL;
    x_read[i] = subnormal ? std::copysign(0.0f, s.x[i]) : s.x[i];
    ref[i] = subnormal ? c.reference(x_read[i]) : s.reference[i];
    if (c.metric != Metric::kAbsoluteBelowHalf && std::fabs(ref[i]) < 0x1p-100) {
      ASSERT_LT(std::fabs(y[i]), 0x1p-99) << c.name << " at x = " << s.x[i] << ": exact " << ref[i];
      y[i] = static_cast<float>(ref[i]);  // checked; counts as exact below
    }
  }
  expect_within_bound(x_read, y, ref, "ftz/daz");
}

std::string accuracy_name(const ::testing::TestParamInfo<std::tuple<size_t, Isa>>& info) {
  return all_cases()[std::get<0>(info.param)].name + "_" + vm::isa_name(std::get<1>(info.param));
}

std::vector<size_t> case_indices() {
  std::vector<size_t> indices(all_cases().size());
  for (size_t i = 0; i < indices.size(); ++i) indices[i] = i;
  return indices;
}

INSTANTIATE_TEST_SUITE_P(Builds, VectorMathAccuracy,
                         ::testing::Combine(::testing::ValuesIn(case_indices()),
                                            ::testing::ValuesIn(supported_isas())),
                         accuracy_name);

// ---- loop mechanics per build ----

class VectorMathBuild : public ::testing::TestWithParam<Isa> {};

// Values around every cut-off plus specials, in an order that puts them in every vector lane.
std::vector<float> mixed_inputs(int64_t n) {
  Generator gen(11);
  const Tensor r = rand({n}, gen, -12.0, 12.0);
  std::vector<float> x(r.data<float>(), r.data<float>() + n);
  const float specials[] = {0.0f,
                            -0.0f,
                            1.0f,
                            -1.0f,
                            0.75f,
                            4.0f,
                            -104.5f,
                            88.8f,
                            std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(),
                            1e-40f,
                            -1e-40f};
  for (size_t i = 0; i < std::size(specials); ++i) x[7 * i + 3] = specials[i];
  return x;
}

bool same_bits(float a, float b) {
  return std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b);
}

// A kernel's result for an element must not depend on where the element sits: vector body or
// scalar tail, aligned or not, in place or not (elementwise splits arrays between threads).
TEST_P(VectorMathBuild, TailsOffsetsAndInPlaceMatchTheWholeArray) {
  const int64_t n = 97;
  const std::vector<float> x = mixed_inputs(n);
  for (const Case& c : all_cases()) {
    const Kernels& k = vm::kernels(GetParam());
    std::vector<float> whole(n);
    c.run(k, x.data(), whole.data(), n);
    for (int64_t offset = 0; offset < 5; ++offset) {
      for (int64_t len = 0; offset + len <= n && len <= 40; ++len) {
        std::vector<float> part(n, -7.0f);
        c.run(k, x.data() + offset, part.data() + offset, len);
        for (int64_t i = 0; i < n; ++i) {
          const bool inside = i >= offset && i < offset + len;
          ASSERT_TRUE(same_bits(part[i], inside ? whole[i] : -7.0f))
              << c.name << " offset " << offset << " length " << len << " element " << i;
        }
      }
    }
    if (c.name.find("backward") != std::string::npos) continue;  // run() owns grad_y
    std::vector<float> in_place = x;
    c.run(k, in_place.data(), in_place.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_TRUE(same_bits(in_place[i], whole[i])) << c.name << " in place, element " << i;
    }
  }
}

// grad_x = grad_y * f'(x): the product of grad_y and the grad_y = 1 result, to the bit.
TEST_P(VectorMathBuild, BackwardMultipliesByGradY) {
  const int64_t n = 1000;
  const std::vector<float> x = mixed_inputs(n);
  Generator gen(12);
  const Tensor g_tensor = randn({n}, gen);
  const float* g = g_tensor.data<float>();
  const std::vector<float> ones(n, 1.0f);
  const Kernels& k = vm::kernels(GetParam());
  for (Backward kernel :
       {&Kernels::silu_backward, &Kernels::gelu_erf_backward, &Kernels::gelu_tanh_backward}) {
    std::vector<float> derivative(n);
    std::vector<float> grad_x(n);
    (k.*kernel)(x.data(), ones.data(), derivative.data(), n);
    (k.*kernel)(x.data(), g, grad_x.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_TRUE(same_bits(grad_x[i], g[i] * derivative[i])) << "element " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Builds, VectorMathBuild, ::testing::ValuesIn(supported_isas()),
                         [](const ::testing::TestParamInfo<Isa>& info) {
                           return std::string(vm::isa_name(info.param));
                         });

// exp_flush_to_zero (the softmax family's exp) is exp where e^x is a normal float and +0 where
// it would be subnormal, also without FTZ.
TEST(VectorMathElement, ExpFlushToZeroNeverReturnsASubnormal) {
  const DenormalMode ieee(false);
  std::vector<float> xs = {-std::numeric_limits<float>::infinity(), -200.0f, -104.0f, -88.0f,
                           std::numeric_limits<float>::infinity()};
  for (int i = 0; i <= 200000; ++i) xs.push_back(-110.0f + 200.0f * static_cast<float>(i) / 200000);
  for (float x : xs) {
    const float flushed = vm::exp_flush_to_zero(x);
    const float full = vm::exp(x);
    EXPECT_NE(std::fpclassify(flushed), FP_SUBNORMAL) << "x = " << x;
    if (std::fpclassify(full) == FP_SUBNORMAL || full == 0.0f) {
      EXPECT_TRUE(same_bits(flushed, 0.0f)) << "x = " << x;
    } else if (std::exp(static_cast<double>(x)) >= 0x1p-126) {
      EXPECT_TRUE(same_bits(flushed, full)) << "x = " << x;
    }
  }
  EXPECT_TRUE(std::isnan(vm::exp_flush_to_zero(std::numeric_limits<float>::quiet_NaN())));
}

TEST(VectorMathDispatch, PicksTheWidestSupportedBuild) {
  EXPECT_TRUE(vm::isa_supported(Isa::kPortable));
  // ROTA_MAX_CPU_ISA (set by the ctest runs of the narrower builds) caps the choice.
  const Isa cap = vm::max_isa_from_environment();
  const Isa expected = cap >= Isa::kAvx512 && vm::isa_supported(Isa::kAvx512) ? Isa::kAvx512
                       : cap >= Isa::kAvx2 && vm::isa_supported(Isa::kAvx2)   ? Isa::kAvx2
                                                                              : Isa::kPortable;
  EXPECT_EQ(vm::best_isa(), expected);
  EXPECT_EQ(vm::kernels().isa, expected);
  EXPECT_EQ(vm::kernels(Isa::kPortable).isa, Isa::kPortable);
}

// Sets the kernel thread count for a scope.
class ThreadCount {
 public:
  explicit ThreadCount(int n) : previous_(backend::num_threads()) { backend::set_num_threads(n); }
  ~ThreadCount() { backend::set_num_threads(previous_); }

 private:
  int previous_;
};

// backend::unary / unary_backward on f32 run these kernels (split over threads): same bits as
// one call over the whole array.
TEST(VectorMathElementwise, F32UnaryOpsRunTheKernels) {
  using backend::UnaryOp;
  const int64_t n = 100003;
  const ThreadCount two_threads(2);
  const std::vector<float> xs = mixed_inputs(n);
  Tensor x = Tensor::empty({n}, DType::kF32);
  std::copy(xs.begin(), xs.end(), x.data<float>());
  const Kernels& k = vm::kernels();
  const auto expect_bits = [&](const Tensor& actual, const std::vector<float>& expected,
                               const char* op) {
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_TRUE(same_bits(actual.data<float>()[i], expected[i])) << op << " element " << i;
    }
  };
  const struct {
    UnaryOp op;
    Forward kernel;
  } forwards[] = {{UnaryOp::kExp, &Kernels::exp},
                  {UnaryOp::kTanh, &Kernels::tanh},
                  {UnaryOp::kSigmoid, &Kernels::sigmoid},
                  {UnaryOp::kSilu, &Kernels::silu},
                  {UnaryOp::kOnePlusElu, &Kernels::one_plus_elu},
                  {UnaryOp::kGeluErf, &Kernels::gelu_erf},
                  {UnaryOp::kGeluTanh, &Kernels::gelu_tanh}};
  std::vector<float> expected(n);
  for (const auto& f : forwards) {
    (k.*f.kernel)(xs.data(), expected.data(), n);
    expect_bits(backend::unary(f.op, x), expected, backend::unary_op_name(f.op));
  }
  k.elu(xs.data(), expected.data(), n, 0.7f);
  expect_bits(backend::unary(UnaryOp::kElu, x, 0.7), expected, "elu");

  Generator gen(13);
  const Tensor g = randn({n}, gen);
  const struct {
    UnaryOp op;
    Backward kernel;
  } backwards[] = {{UnaryOp::kSilu, &Kernels::silu_backward},
                   {UnaryOp::kGeluErf, &Kernels::gelu_erf_backward},
                   {UnaryOp::kGeluTanh, &Kernels::gelu_tanh_backward}};
  for (const auto& b : backwards) {
    (k.*b.kernel)(xs.data(), g.data<float>(), expected.data(), n);
    const Tensor y = backend::unary(b.op, x);
    expect_bits(backend::unary_backward(b.op, x, y, g), expected, backend::unary_op_name(b.op));
  }
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
