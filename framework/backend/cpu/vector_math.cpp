// The array kernels of vector_math.h: one set of loops, built per instruction set, picked at
// run time from what the CPU supports.
#include "framework/backend/cpu/vector_math.h"

#include <cstdlib>
#include <limits>
#include <string>

#include "framework/backend/cpu/isa_build.h"
#include "framework/base/error.h"

namespace rota::backend::vecmath {

namespace {

constexpr float kInvSqrt2 = static_cast<float>(0.70710678118654752440084436210485);
constexpr float kInvSqrt2Pi = static_cast<float>(0.39894228040143267793994605993438);
constexpr float kSqrt2OverPi = static_cast<float>(0.79788456080286535587989211986876);
constexpr float kGeluCubic = 0.044715f;
constexpr float kInf = std::numeric_limits<float>::infinity();

using detail::mask_if;
using detail::select;

// The element functions the kernels map: apply(x) (or apply(x, param)) for forward maps,
// derivative(x) for backward ones: the functions of backend/elementwise.cpp, GELU(erf) and SiLU
// with its formulas, GELU(tanh) rearranged for precision.

struct Exp {
  static float apply(float x) { return exp(x); }
};

struct Expm1 {
  static float apply(float x) { return expm1(x); }
};

struct Erf {
  static float apply(float x) { return erf(x); }
};

struct Tanh {
  static float apply(float x) { return tanh(x); }
};

struct Sigmoid {
  static float apply(float x) { return sigmoid(x); }
};

// sigmoid(z) and 1 - sigmoid(z) = sigmoid(-z), both from e = e^{-|z|} with one division, so
// each keeps its relative precision (no cancellation in 1 - s where s is close to 1).
struct SigmoidPair {
  float s;
  float one_minus_s;
};

inline SigmoidPair sigmoid_pair(float z) {
  const float e = exp(-detail::abs_of(z));
  const int32_t negative = mask_if(z < 0.0f);
  const float inv = 1.0f / (1.0f + e);
  return {select(negative, e, 1.0f) * inv, select(negative, 1.0f, e) * inv};
}

struct Silu {
  static float apply(float x) { return x * sigmoid(x); }
  // s (1 + x (1 - s)), s = sigmoid(x).
  static float derivative(float x) {
    const SigmoidPair p = sigmoid_pair(x);
    return p.s * (1.0f + x * p.one_minus_s);
  }
};

struct Elu {
  static float apply(float x, float alpha) {
    return select(mask_if(x > 0.0f), x, alpha * expm1(x));
  }
};

struct OnePlusElu {
  static float apply(float x) { return one_plus_elu(x); }
};

struct GeluErf {
  static float apply(float x) { return 0.5f * x * (1.0f + erf(x * kInvSqrt2)); }
  // Phi(x) + x phi(x), with one exponential: e^{-x^2/2} is phi's and also the e^{-a^2},
  // a = x/sqrt 2, of erf's |a| >= 1 branch (computed from x^2 / 2, one rounding fewer).
  static float derivative(float x) {
    const float gaussian = exp(-x * x / 2.0f);
    return 0.5f * (1.0f + detail::erf_given_exp(x * kInvSqrt2, gaussian)) +
           x * kInvSqrt2Pi * gaussian;
  }
};

// (1 + tanh u) / 2 = sigmoid(2u) and (1 - tanh^2 u) / 4 = sigmoid(2u) sigmoid(-2u): the same
// function as x/2 (1 + tanh u), u = sqrt(2/pi) (x + 0.044715 x^3), without the cancellation in
// 1 + tanh u and 1 - tanh^2 u for x < 0, which costs the libm-style formula all relative
// precision of the left tail (and of the derivative there, ~10x its size at x = -5).
struct GeluTanh {
  static float inner(float x) { return kSqrt2OverPi * (x + kGeluCubic * x * x * x); }
  static float apply(float x) { return x * sigmoid(2.0f * inner(x)); }
  // sigmoid(2u) + 2 x sigmoid(2u) sigmoid(-2u) u'(x). Finite |x| > 10 is clamped to 10, where
  // the second term is below 1e-35, so that x^3 cannot overflow into 0 * inf = NaN; ±inf stays
  // (NaN, as the formula gives in f64).
  static float derivative(float x) {
    const float a = detail::abs_of(x);
    const int32_t clamp = mask_if(a > 10.0f) & mask_if(a < kInf);  // `&&` would branch
    const float xc = select(clamp, detail::with_sign_of(10.0f, x), x);
    const SigmoidPair p = sigmoid_pair(2.0f * inner(xc));
    const float d_inner = kSqrt2OverPi * (1.0f + 3.0f * kGeluCubic * xc * xc);
    return p.s + 2.0f * xc * p.s * p.one_minus_s * d_inner;
  }
};

// ---- the loops, x, y, grad_y, grad_x: [n] ----

template <typename F>
inline void map_loop(const float* x, float* y, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = F::apply(x[i]);
}

template <typename F>
inline void map_with_param_loop(const float* x, float* y, int64_t n, float param) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = F::apply(x[i], param);
}

template <typename F>
inline void backward_loop(const float* x, const float* grad_y, float* grad_x, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) grad_x[i] = grad_y[i] * F::derivative(x[i]);
}

// The bf16 bits of x: round to nearest even on the bit pattern; NaN stays a quiet NaN (the top
// 16 bits with the quiet bit set); subnormals round like any other value (no flush). Both
// results are computed and one kept by mask: a `?:` over them stays a branch.
inline uint32_t bf16_bits_of(float x) {
  const uint32_t u = std::bit_cast<uint32_t>(x);
  const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const uint32_t quiet_nan = (u >> 16) | 0x40u;
  const uint32_t is_nan = 0u - static_cast<uint32_t>((u & 0x7fffffffu) > 0x7f800000u);
  return (quiet_nan & is_nan) | (rounded & ~is_nan);
}

// x: [n] f32, y: [n] bf16 bits.
inline void round_to_bf16_loop(const float* x, uint16_t* y, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<uint16_t>(bf16_bits_of(x[i]));
}

// x, y: [n] f32; y[i] = the value of bf16_bits_of(x[i]): one pass instead of rounding to bf16
// and widening back.
inline void round_to_bf16_value_loop(const float* x, float* y, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = std::bit_cast<float>(bf16_bits_of(x[i]) << 16);
}

// The kernels of one build (isa_build.h): each loop compiled for Build::isa.
template <typename Build>
Kernels make_kernels() {
  Kernels k{};
  k.isa = Build::isa;
  k.exp = Build::template of<&map_loop<Exp>>;
  k.expm1 = Build::template of<&map_loop<Expm1>>;
  k.erf = Build::template of<&map_loop<Erf>>;
  k.tanh = Build::template of<&map_loop<Tanh>>;
  k.sigmoid = Build::template of<&map_loop<Sigmoid>>;
  k.silu = Build::template of<&map_loop<Silu>>;
  k.elu = Build::template of<&map_with_param_loop<Elu>>;
  k.one_plus_elu = Build::template of<&map_loop<OnePlusElu>>;
  k.gelu_erf = Build::template of<&map_loop<GeluErf>>;
  k.gelu_tanh = Build::template of<&map_loop<GeluTanh>>;
  k.silu_backward = Build::template of<&backward_loop<Silu>>;
  k.gelu_erf_backward = Build::template of<&backward_loop<GeluErf>>;
  k.gelu_tanh_backward = Build::template of<&backward_loop<GeluTanh>>;
  k.round_to_bf16 = Build::template of<&round_to_bf16_loop>;
  k.round_to_bf16_value = Build::template of<&round_to_bf16_value_loop>;
  return k;
}

}  // namespace

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::kPortable:
      return "portable";
    case Isa::kAvx2:
      return "avx2";
    case Isa::kAvx512:
      return "avx512";
  }
  return "?";
}

bool isa_supported(Isa isa) {
#if defined(__x86_64__)
  // Checks the CPUID bits and that the OS saves the vector registers (XGETBV).
  __builtin_cpu_init();
  switch (isa) {
    case Isa::kPortable:
      return true;
    case Isa::kAvx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case Isa::kAvx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma");
  }
  return false;
#else
  return isa == Isa::kPortable;
#endif
}

Isa max_isa_from_environment() {
  const char* value = std::getenv("ROTA_MAX_CPU_ISA");
  if (value == nullptr || *value == '\0') return Isa::kAvx512;
  const std::string name(value);
  for (Isa isa : {Isa::kPortable, Isa::kAvx2, Isa::kAvx512}) {
    if (name == isa_name(isa)) return isa;
  }
  ROTA_CHECK(false, "ROTA_MAX_CPU_ISA={}: expected portable, avx2 or avx512", name);
  return Isa::kAvx512;
}

Isa best_isa() {
  const Isa cap = max_isa_from_environment();
  if (cap >= Isa::kAvx512 && isa_supported(Isa::kAvx512)) return Isa::kAvx512;
  if (cap >= Isa::kAvx2 && isa_supported(Isa::kAvx2)) return Isa::kAvx2;
  return Isa::kPortable;
}

const Kernels& kernels(Isa isa) {
  ROTA_CHECK(isa_supported(isa), "vecmath::kernels: this CPU cannot run the {} build",
             isa_name(isa));
  static const Kernels portable = make_kernels<PortableBuild>();
#if defined(__x86_64__)
  static const Kernels avx2 = make_kernels<Avx2Build>();
  static const Kernels avx512 = make_kernels<Avx512Build>();
  if (isa == Isa::kAvx512) return avx512;
  if (isa == Isa::kAvx2) return avx2;
#endif
  return portable;
}

const Kernels& kernels() {
  static const Kernels& chosen = kernels(best_isa());
  return chosen;
}

}  // namespace rota::backend::vecmath
