// Vectorisable f32 exp, expm1, erf and tanh, and array kernels of the activations built on
// them, compiled for AVX-512, AVX2+FMA and portable x86-64 and picked at run time.
#pragma once

#include <bit>
#include <cstdint>

namespace rota::backend::vecmath {

// ---- Element forms ----
//
// glibc's expf/erff/tanhf are opaque scalar calls (GCC only has SIMD variants of them under
// -ffast-math), so a loop calling them runs one element at a time: erff and tanhf cost
// ~7-9 ns each. These are plain arithmetic that `#pragma omp simd` loops vectorise:
// range reduction plus polynomials, no branches. Every path is computed and the answer is
// picked with integer masks: GCC keeps a float `?:` whose arms do float arithmetic as a branch
// (under -ftrapping-math it may not run them speculatively) and then does not vectorise.
// Special values give what libm gives: ±0 keep their sign, NaN stays NaN, overflow is inf,
// underflow goes through the subnormals to 0, erf(±inf) = ±1, tanh saturates to ±1.
//
// Largest error against the exact value found by tests/framework/backend/cpu/vector_math_test.cpp
// (dense sweeps of every binade plus the active ranges, each build, IEEE and FTZ/DAZ modes): exp
// 1.01 ulp, expm1 1.58, erf 1.28, tanh 1.05, sigmoid 2.31. glibc is ~0.5-1 ulp.

// ---- Building blocks of the f32 exp variants (here and in the softmax-family kernels) ----

/// p(x) = c0 x^k + c1 x^(k-1) + ... + ck by Horner's rule: p = c0, then p = p * x + c for each
/// further coefficient, in order (the one evaluation order every polynomial here uses).
template <typename... C>
inline float horner(float x, float c0, C... rest) {
  float p = c0;
  ((p = p * x + rest), ...);
  return p;
}

/// Cody-Waite range reduction: r = x - n ln2 with ln 2 in two parts, so that n * kLn2Hi is exact
/// for the integers n that occur (|n| <= 150), and |r| <= ln2 / 2 for n = round(x log2 e).
constexpr float kLog2e = 1.44269504088896341f;
constexpr float kLn2Hi = 0.693359375f;
constexpr float kLn2Lo = -2.12194440e-4f;
constexpr float kRoundToInt = 12582912.0f;  // 1.5 * 2^23: adding and subtracting rounds to integer

inline float exp_reduce(float x, float n) {
  return (x - n * kLn2Hi) - n * kLn2Lo;
}

/// Cephes' expf polynomial: e^r - 1 = r + r^2 p(r) for |r| <= ln2 / 2 (p degree 5). Every f32
/// exp in the backend (the masked one here, the clamped ones of the cross-entropy and softmax
/// attention kernels) reduces its argument with exp_reduce and evaluates this p.
inline float exp_poly(float r) {
  return horner(r, 1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f, 4.1665795894e-2f,
                1.6666665459e-1f, 5.0000001201e-1f);
}

namespace detail {

inline int32_t mask_if(bool condition) {
  return -static_cast<int32_t>(condition);
}

// mask ? a : b, bitwise (mask is all ones or all zeros).
inline float select(int32_t mask, float a, float b) {
  return std::bit_cast<float>((std::bit_cast<int32_t>(a) & mask) |
                              (std::bit_cast<int32_t>(b) & ~mask));
}

inline float abs_of(float x) {
  return std::bit_cast<float>(std::bit_cast<int32_t>(x) & 0x7fffffff);
}

// |magnitude| with the sign bit of x (magnitude must be >= 0 or NaN).
inline float with_sign_of(float magnitude, float x) {
  return std::bit_cast<float>(std::bit_cast<int32_t>(magnitude) |
                              (std::bit_cast<int32_t>(x) & static_cast<int32_t>(0x80000000u)));
}

// x = n ln2 + r with |r| <= ln2 / 2, and e^r - 1 = r + r^2 exp_poly(r). n is zeroed where x is
// NaN or outside [kMinArg, kMaxArg], so its conversion to int is always defined; r then carries
// a NaN through.
struct ExpParts {
  float em1_r;    // e^r - 1
  int32_t n;      // 0 when out of range
  int32_t below;  // mask: x < kMinArg, e^x rounds to +0
  int32_t above;  // mask: x > kMaxArg, e^x overflows to inf
};

constexpr float kExpMinArg = -104.0f;            // below ln(2^-150): e^x rounds to 0
constexpr float kExpMaxArg = 88.7228391116729f;  // ln(FLT_MAX + ulp/2): above, e^x is inf
constexpr int32_t kInfBits = 0x7f800000;

inline ExpParts exp_parts(float x) {
  const int32_t below = mask_if(x < kExpMinArg);
  const int32_t above = mask_if(x > kExpMaxArg);
  const int32_t nan = mask_if(x != x);
  const float n_raw = (x * kLog2e + kRoundToInt) - kRoundToInt;
  const float n = std::bit_cast<float>(std::bit_cast<int32_t>(n_raw) & ~(below | above | nan));
  const float r = exp_reduce(x, n);
  const float p = exp_poly(r);
  return {p * r * r + r, static_cast<int32_t>(n), below, above};
}

// e^x from its parts: (1 + (e^r - 1)) 2^n, with 2^n applied as two factors so that n = 128
// (x just below kMaxArg) and n down to -150 (subnormal results, rounded once) need no
// out-of-range exponent field.
inline float exp_from_parts(const ExpParts& parts) {
  const float p = parts.em1_r + 1.0f;
  const int32_t half = parts.n >> 1;
  const float y = p * std::bit_cast<float>((half + 127) << 23) *
                  std::bit_cast<float>((parts.n - half + 127) << 23);
  return std::bit_cast<float>((std::bit_cast<int32_t>(y) & ~(parts.below | parts.above)) |
                              (kInfBits & parts.above));
}

}  // namespace detail

/// e^x. Overflows to inf above ln(FLT_MAX), subnormal results down to x = -103.97, then 0.
inline float exp(float x) {
  return detail::exp_from_parts(detail::exp_parts(x));
}

/// 1 + elu(x) = x > 0 ? x + 1 : e^x, linear attention's feature map (NaN stays NaN).
inline float one_plus_elu(float x) {
  return detail::select(detail::mask_if(x > 0.0f), x + 1.0f, exp(x));
}

/// The slope of 1 + elu at x given y = 1 + elu(x): 1 where y > 1 (x > 0), else y (= e^x); NaN
/// stays NaN.
inline float one_plus_elu_slope(float y) {
  return detail::select(detail::mask_if(y > 1.0f), 1.0f, y);
}

/// e^x with the results below FLT_MIN (x < ln FLT_MIN) returned as +0, as FTZ would: for
/// kernels (the softmax family) that must answer the same whether or not the calling thread
/// flushes subnormals.
inline float exp_flush_to_zero(float x) {
  constexpr float kLnFltMin = -87.3365447505531f;
  return detail::select(detail::mask_if(x < kLnFltMin), 0.0f, exp(x));
}

/// e^x - 1 without the cancellation near 0: 2^n (e^r - 1) + (2^n - 1), where 2^n - 1 is exact
/// for |n| <= 24; for n > 24 the -1 is far below the rounding of e^x, so it is e^x - 1; for
/// x < -17.5 the answer rounds to -1.
inline float expm1(float x) {
  const detail::ExpParts parts = detail::exp_parts(x);
  const float two_n = std::bit_cast<float>((parts.n + 127) << 23);  // used only for |n| <= 24
  const float reduced = two_n * parts.em1_r + (two_n - 1.0f);
  const float large = detail::exp_from_parts(parts) - 1.0f;
  const float y = detail::select(parts.above | detail::mask_if(parts.n > 24), large,
                                 detail::select(detail::mask_if(x < -17.5f), -1.0f, reduced));
  return detail::select(detail::mask_if(x == 0.0f), x, y);  // keeps the sign of -0
}

namespace detail {

/// erf(x) given e = e^{-min(|x|, 4)^2}, the exponential of its |x| >= 1 branch (which needs it
/// only for |x| <= 4: beyond, e R(t) < 2^-25 and erf rounds to ±1 whatever e is, so any
/// e <= e^{-16} there gives the same result, e.g. the unclamped e^{-x^2}). See erf().
inline float erf_given_exp(float x, float exp_minus_square) {
  const float a_raw = abs_of(x);
  // NaN stays NaN (the comparison is false)
  const float a = select(mask_if(a_raw > 4.0f), 4.0f, a_raw);
  const float s = a * a;
  const float q = horner(s, 7.853857824e-05f, -8.010192541e-04f, 5.188327748e-03f,
                         -2.685381100e-02f, 1.128358543e-01f, -3.761262596e-01f, 1.283791661e-01f);
  const float near_zero = a + a * q;
  const float t = 1.0f / (1.0f + 0.7f * a);
  const float r = horner(t, -2.937683761e-01f, 5.743424296e-01f, 3.097943068e-01f, 4.064800143e-01f,
                         -4.471717402e-04f);
  const float far = 1.0f - exp_minus_square * r;
  return with_sign_of(select(mask_if(a < 1.0f), near_zero, far), x);
}

}  // namespace detail

/// erf(x). |x| < 1: x + x q(x^2) (odd polynomial, degree 13); |x| >= 1:
/// 1 - e^{-x^2} R(t), t = 1 / (1 + 0.7 |x|), R a degree-4 polynomial (erfc(x) e^{x^2} is smooth
/// in t); from |x| = 4 on, erf rounds to ±1. Coefficients: weighted least-squares fits made
/// minimax by Lawson iterations, relative error for q, error of erf for R.
inline float erf(float x) {
  const float a =
      detail::select(detail::mask_if(detail::abs_of(x) > 4.0f), 4.0f, detail::abs_of(x));
  return detail::erf_given_exp(x, exp(-(a * a)));
}

/// tanh(x). |x| < 0.75: x + x^3 p(x^2) (degree 13); above, 1 - 2 / (e^{2|x|} + 1), which
/// saturates to ±1 (e^{2|x|} = inf gives exactly 1).
inline float tanh(float x) {
  const float a = detail::abs_of(x);
  const float s = a * a;
  const float p = horner(s, 1.736931503e-03f, -7.657248061e-03f, 2.145203017e-02f,
                         -5.389272422e-02f, 1.333269477e-01f, -3.333331645e-01f);
  const float near_zero = a + (a * s) * p;
  const float far = 1.0f - 2.0f / (exp(2.0f * a) + 1.0f);
  return detail::with_sign_of(detail::select(detail::mask_if(a < 0.75f), near_zero, far), x);
}

/// 1 / (1 + e^-x), as e^{-|x|} / (1 + e^{-|x|}) for x < 0 so that the left tail keeps full
/// relative precision (down to subnormals) instead of rounding 1 + e^-x.
inline float sigmoid(float x) {
  const float e = exp(-detail::abs_of(x));
  return detail::select(detail::mask_if(x < 0.0f), e, 1.0f) / (1.0f + e);
}

// ---- Array kernels ----

/// The instruction sets the array kernels are built for. kPortable is plain x86-64 (SSE2) and
/// runs everywhere; kAvx2 needs AVX2 and FMA; kAvx512 needs AVX-512F and FMA.
enum class Isa { kPortable, kAvx2, kAvx512 };

const char* isa_name(Isa isa);
/// True when this CPU (and OS) can run the kernels built for isa.
bool isa_supported(Isa isa);
/// The widest supported instruction set, capped by the environment variable ROTA_MAX_CPU_ISA
/// (portable, avx2 or avx512; like oneDNN's DNNL_MAX_CPU_ISA) when set: what kernels() and
/// the other run-time dispatched kernels use. An unknown value is an error.
Isa max_isa_from_environment();
Isa best_isa();

/// f32 kernels over arrays, one build per instruction set. Forward maps: y[i] = f(x[i]);
/// backward maps: grad_x[i] = grad_y[i] * f'(x[i]). All arrays are [n]; y may be x and grad_x
/// may be grad_y (in place). The functions are those of backend/elementwise.h. With FMA the
/// builds may differ from each other in the last bits, but within a build an element's result
/// does not depend on its position or on n (threads may split arrays anywhere).
struct Kernels {
  Isa isa;
  void (*exp)(const float* x, float* y, int64_t n);
  void (*expm1)(const float* x, float* y, int64_t n);
  void (*erf)(const float* x, float* y, int64_t n);
  void (*tanh)(const float* x, float* y, int64_t n);
  void (*sigmoid)(const float* x, float* y, int64_t n);
  /// x sigmoid(x)
  void (*silu)(const float* x, float* y, int64_t n);
  /// x > 0 ? x : alpha (e^x - 1)
  void (*elu)(const float* x, float* y, int64_t n, float alpha);
  /// x > 0 ? x + 1 : e^x
  void (*one_plus_elu)(const float* x, float* y, int64_t n);
  /// x/2 (1 + erf(x / sqrt 2))
  void (*gelu_erf)(const float* x, float* y, int64_t n);
  /// x/2 (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3), computed as x sigmoid(2u)
  void (*gelu_tanh)(const float* x, float* y, int64_t n);
  void (*silu_backward)(const float* x, const float* grad_y, float* grad_x, int64_t n);
  void (*gelu_erf_backward)(const float* x, const float* grad_y, float* grad_x, int64_t n);
  void (*gelu_tanh_backward)(const float* x, const float* grad_y, float* grad_x, int64_t n);
  /// y[i] = the bf16 bits of x[i] rounded to nearest even (float_to_bf16 of tensor/dtype.h):
  /// integer arithmetic only, so every build gives the same bits.
  void (*round_to_bf16)(const float* x, uint16_t* y, int64_t n);
  /// y[i] = x[i] rounded to bf16 as above, kept as the f32 value those bits stand for (the low
  /// 16 bits zero): the operands of bf16 products where oneDNN has no bf16 kernel.
  void (*round_to_bf16_value)(const float* x, float* y, int64_t n);
};

/// The kernels built for isa (which must be supported: tests call each build explicitly).
const Kernels& kernels(Isa isa);
/// The kernels for best_isa(), chosen once.
const Kernels& kernels();

}  // namespace rota::backend::vecmath
