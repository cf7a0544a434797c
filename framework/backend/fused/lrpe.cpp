// Fused LRPE kernel: one pass per row applies P then Λ(s); the backward mirrors it.
#include "framework/backend/fused/lrpe.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <type_traits>

#include "framework/backend/cpu/dispatch.h"
#include "framework/backend/cpu/isa_build.h"
#include "framework/backend/cpu/parallel.h"
#include "framework/backend/cpu/vector_math.h"
#include "framework/tensor/strided_loop.h"

namespace rota::backend {

int64_t lrpe_output_dim(LrpeCore core, int64_t d) {
  return core == LrpeCore::kUnitary ? 2 * d : d;
}

std::vector<int64_t> permutation_power_table(const Tensor& permutation, int64_t offset, int64_t n) {
  const int64_t d = permutation.numel();
  const std::vector<double> pv = permutation.to_double_vector();
  std::vector<int64_t> pi(d);
  std::vector<bool> seen(d, false);
  for (int64_t j = 0; j < d; ++j) {
    pi[j] = static_cast<int64_t>(pv[j]);
    ROTA_CHECK(pi[j] >= 0 && pi[j] < d && !seen[pi[j]],
               "lrpe: permutation {} is not a permutation of 0..{}", permutation.to_string(16),
               d - 1);
    seen[pi[j]] = true;
  }
  // Cycle decomposition: j sits at position pos[j] of cycle cyc[j]; π^s(j) moves s steps on.
  std::vector<std::vector<int64_t>> cycles;
  std::vector<int64_t> cycle_of(d, -1);
  std::vector<int64_t> pos(d, 0);
  for (int64_t j = 0; j < d; ++j) {
    if (cycle_of[j] >= 0) continue;
    std::vector<int64_t> cycle;
    for (int64_t x = j; cycle_of[x] < 0; x = pi[x]) {
      cycle_of[x] = static_cast<int64_t>(cycles.size());
      pos[x] = static_cast<int64_t>(cycle.size());
      cycle.push_back(x);
    }
    cycles.push_back(std::move(cycle));
  }
  std::vector<int64_t> table(n * d);
  for (int64_t r = 0; r < n; ++r) {
    const int64_t s = offset + r;
    for (int64_t j = 0; j < d; ++j) {
      const auto& cycle = cycles[cycle_of[j]];
      const int64_t len = static_cast<int64_t>(cycle.size());
      table[r * d + j] = cycle[(pos[j] + s % len) % len];
    }
  }
  return table;
}

namespace {

using vecmath::Isa;

struct LrpeDims {
  int64_t rows;  // G·N
  int64_t n;     // N
  int64_t d;     // D
  int64_t f;     // F
  int64_t m;     // number of angles
};

LrpeDims check_inputs(const char* op, const LrpeKernelConfig& c, const Tensor& x,
                      const Tensor& theta, const Tensor& w, const Tensor& permutation) {
  ROTA_CHECK(x.dim() >= 2, "{}: x {} must be [..., N, D]", op, shape_str(x.shape()));
  LrpeDims s;
  s.n = x.size(-2);
  s.d = x.size(-1);
  s.rows = s.d ? x.numel() / s.d : 0;
  s.f = lrpe_output_dim(c.core, s.d);
  s.m = c.core == LrpeCore::kUnitary ? s.d : (c.core == LrpeCore::kOrthogonal ? s.d / 2 : 0);
  ROTA_CHECK(c.offset >= 0, "{}: negative position offset {}", op, c.offset);
  if (c.core == LrpeCore::kPermutation) {
    ROTA_CHECK(permutation.defined() && permutation.numel() == s.d,
               "{}: Type 3 needs a permutation of {} entries, got {}", op, s.d,
               permutation.defined() ? shape_str(permutation.shape()) : "none");
  } else {
    ROTA_CHECK(
        theta.defined() && theta.dim() == 1 && theta.size(0) == s.m && theta.dtype() == x.dtype(),
        "{}: theta must be [{}] {} for x {}, got {}", op, s.m, dtype_name(x.dtype()),
        shape_str(x.shape()), theta.defined() ? shape_str(theta.shape()) : "none");
  }
  if (c.p == LrpeP::kHouseholder) {
    ROTA_CHECK(w.defined() && w.dim() == 1 && w.size(0) == s.d && w.dtype() == x.dtype(),
               "{}: Householder vector must be [{}] {}, got {}", op, s.d, dtype_name(x.dtype()),
               w.defined() ? shape_str(w.shape()) : "none");
  }
  return s;
}

// ---- cos and sin of s·θ ----
//
// Angles are formed in double: s·θ reaches 10^4 rad and more for long sequences, beyond
// float's accuracy. The f64 kernels take cos and sin from libm. The f32 kernels only need
// them to ~1e-15 before rounding to float, which plain arithmetic gives in a loop GCC
// vectorises (libm's sincos is an opaque scalar call, ~20 ns per angle):
//   a = k·π/2 + r, |r| <= π/4 (Cody-Waite: π/2 split into two 33-bit parts and a rest, so
//   k·P1 and k·P2 are exact for |k| < 2^20 and a − k·P1 is exact by Sterbenz; r is within
//   ~2^-53 absolute), then Taylor polynomials of sin r (to r^17) and cos r (to r^16), whose
//   truncation errors are below 1e-19 and 3e-18 on |r| <= π/4, and the quadrant k mod 4.
// The result is within a few 1e-16 of libm's, so after rounding to float it is the same
// number except when the exact value lies within ~1e-16 of a rounding boundary.

constexpr double kPiOver2Part1 = 0x1.921fb544p+0;        // 33 significant bits
constexpr double kPiOver2Part2 = 0x1.0b4611a6p-34;       // the next 33 bits
constexpr double kPiOver2Part3 = 0x1.3198a2e037073p-69;  // π/2 − part1 − part2
constexpr double kTwoOverPi = 0.63661977236758134308;    // 2/π
constexpr double kFastAngleLimit = 1.6e6;                // |a| < 2^20 · π/2 ≈ 1.647e6
constexpr double kRoundToInteger = 6755399441055744.0;   // 1.5 · 2^52
constexpr int64_t kSignBit = static_cast<int64_t>(0x8000000000000000ull);

constexpr double inverse_factorial(int n) {
  double f = 1;
  for (int i = 2; i <= n; ++i) f *= i;
  return 1.0 / f;
}

// cos a and sin a for |a| <= kFastAngleLimit, branch-free (quadrant picked with bit masks).
inline void fast_sincos(double a, double* cos_out, double* sin_out) {
  const double shifted = a * kTwoOverPi + kRoundToInteger;
  const int64_t quadrant = std::bit_cast<int64_t>(shifted) & 3;  // k mod 4 (two's complement)
  const double k = shifted - kRoundToInteger;
  const double r = ((a - k * kPiOver2Part1) - k * kPiOver2Part2) - k * kPiOver2Part3;
  const double z = r * r;
  double ps = -inverse_factorial(17);
  ps = ps * z + inverse_factorial(15);
  ps = ps * z - inverse_factorial(13);
  ps = ps * z + inverse_factorial(11);
  ps = ps * z - inverse_factorial(9);
  ps = ps * z + inverse_factorial(7);
  ps = ps * z - inverse_factorial(5);
  ps = ps * z + inverse_factorial(3);
  const double sin_r = r - r * z * ps;
  double pc = inverse_factorial(16);
  pc = pc * z - inverse_factorial(14);
  pc = pc * z + inverse_factorial(12);
  pc = pc * z - inverse_factorial(10);
  pc = pc * z + inverse_factorial(8);
  pc = pc * z - inverse_factorial(6);
  pc = pc * z + inverse_factorial(4);
  pc = pc * z - inverse_factorial(2);
  const double cos_r = 1.0 + z * pc;
  // Quadrant q: (cos, sin) = (c, s), (−s, c), (−c, −s), (s, −c).
  const int64_t swap = -(quadrant & 1);
  const int64_t cb = std::bit_cast<int64_t>(cos_r);
  const int64_t sb = std::bit_cast<int64_t>(sin_r);
  const int64_t cos_bits = (cb & ~swap) | (sb & swap);
  const int64_t sin_bits = (sb & ~swap) | (cb & swap);
  const int64_t cos_sign = (((quadrant + 1) >> 1) & 1) * kSignBit;  // q = 1, 2
  const int64_t sin_sign = ((quadrant >> 1) & 1) * kSignBit;        // q = 2, 3
  *cos_out = std::bit_cast<double>(cos_bits ^ cos_sign);
  *sin_out = std::bit_cast<double>(sin_bits ^ sin_sign);
}

// cos and sin of pos·θ_k for k in [0, m), all |pos·θ_k| <= kFastAngleLimit, rounded to float.
inline void fast_cos_sin_row(const double* theta, int64_t m, double pos, float* cos_out,
                             float* sin_out) {
#pragma omp simd
  for (int64_t k = 0; k < m; ++k) {
    double c, s;
    fast_sincos(pos * theta[k], &c, &s);
    cos_out[k] = static_cast<float>(c);
    sin_out[k] = static_cast<float>(s);
  }
}

// Per-position tables shared by every row at that position. Type 1: cos / sin are [N, D]
// with cos(sθ_j), sin(sθ_j). Type 2: [N, 2m] indexed by channel, for the pair (i0, i1) of
// angle k: cos[i0] = cos[i1] = cos(sθ_k), sin[i0] = −sin(sθ_k), sin[i1] = +sin(sθ_k), so
// that y[j] = u[j]·cos[j] + u[partner(j)]·sin[j] for both pairings.
template <typename T>
struct PositionTables {
  int64_t width = 0;                // entries per position in cos / sin
  std::vector<T> cos;               // [N, width]
  std::vector<T> sin;               // [N, width]
  std::vector<int64_t> perm_power;  // [N, D] for Type 3
  std::vector<int64_t> odd_even;    // [D]: u[j] = x[odd_even[j]]
};

// ---- Row kernels, specialised on the variant ----
//
// Each variant gets its own instantiation so that no switch runs per row or per element and
// the element loops are plain strided-1 loops GCC vectorises.

template <LrpeCore kCore, LrpePairing kPairing, LrpeP kP, int64_t kDim = 0>
struct Variant {
  static constexpr LrpeCore core = kCore;
  static constexpr LrpePairing pairing = kPairing;
  static constexpr LrpeP p = kP;
  static constexpr int64_t dim = kDim;  // D when fixed at compile time, else 0
};

// Head dimensions the hot variants (Type 2 with identity or Householder P) are compiled for
// with D a constant: their loops then have fixed trip counts, no remainder or alias checks.
constexpr int64_t kFixedDims[] = {32, 64, 128};

// Calls f(Variant<...>{}) for the config's variant (the pairing only matters for Type 2) and
// head dimension d.
template <typename F>
void with_variant(const LrpeKernelConfig& c, int64_t d, F&& f) {
  auto with_p = [&](auto core, auto pairing) {
    constexpr LrpeCore kc = decltype(core)::value;
    constexpr LrpePairing kp = decltype(pairing)::value;
    switch (c.p) {
      case LrpeP::kIdentity:
        return f(Variant<kc, kp, LrpeP::kIdentity>{});
      case LrpeP::kHouseholder:
        return f(Variant<kc, kp, LrpeP::kHouseholder>{});
      case LrpeP::kOddEven:
        return f(Variant<kc, kp, LrpeP::kOddEven>{});
    }
  };
  // Type 2, identity or Householder, d one of kFixedDims.
  auto with_fixed_dim = [&](auto pairing) {
    constexpr LrpePairing kp = decltype(pairing)::value;
    constexpr LrpeCore kc = LrpeCore::kOrthogonal;
    auto with_dim = [&](auto dim) {
      constexpr int64_t kd = decltype(dim)::value;
      if (c.p == LrpeP::kIdentity) return f(Variant<kc, kp, LrpeP::kIdentity, kd>{});
      return f(Variant<kc, kp, LrpeP::kHouseholder, kd>{});
    };
    if (d == kFixedDims[0]) return with_dim(std::integral_constant<int64_t, kFixedDims[0]>{});
    if (d == kFixedDims[1]) return with_dim(std::integral_constant<int64_t, kFixedDims[1]>{});
    return with_dim(std::integral_constant<int64_t, kFixedDims[2]>{});
  };
  using Adjacent = std::integral_constant<LrpePairing, LrpePairing::kAdjacent>;
  using Half = std::integral_constant<LrpePairing, LrpePairing::kHalf>;
  const bool fixed =
      c.core == LrpeCore::kOrthogonal && c.p != LrpeP::kOddEven &&
      std::find(std::begin(kFixedDims), std::end(kFixedDims), d) != std::end(kFixedDims);
  switch (c.core) {
    case LrpeCore::kUnitary:
      return with_p(std::integral_constant<LrpeCore, LrpeCore::kUnitary>{}, Adjacent{});
    case LrpeCore::kOrthogonal:
      if (c.pairing == LrpePairing::kHalf) {
        if (fixed) return with_fixed_dim(Half{});
        return with_p(std::integral_constant<LrpeCore, LrpeCore::kOrthogonal>{}, Half{});
      }
      if (fixed) return with_fixed_dim(Adjacent{});
      return with_p(std::integral_constant<LrpeCore, LrpeCore::kOrthogonal>{}, Adjacent{});
    case LrpeCore::kPermutation:
      return with_p(std::integral_constant<LrpeCore, LrpeCore::kPermutation>{}, Adjacent{});
  }
}

// a·b over [n] with eight interleaved partial sums combined in a fixed order: vectorisable,
// and the result depends only on the values and the build (not on alignment or threads).
template <typename T>
inline T dot(const T* __restrict a, const T* __restrict b, int64_t n) {
  constexpr int64_t kLanes = 8;
  T part[kLanes] = {};
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) {
    for (int64_t l = 0; l < kLanes; ++l) part[l] += a[j + l] * b[j + l];
  }
  T tail = 0;
  for (; j < n; ++j) tail += a[j] * b[j];
  return (((part[0] + part[4]) + (part[2] + part[6])) +
          ((part[1] + part[5]) + (part[3] + part[7]))) +
         tail;
}

// y[i] = a[i] + scale·b[i] over [n].
template <typename T>
inline void axpy(const T* __restrict a, T scale, const T* __restrict b, T* __restrict y,
                 int64_t n) {
  for (int64_t j = 0; j < n; ++j) y[j] = a[j] + scale * b[j];
}

// Type 2 rotation of one row by the position's channel tables: y[j] = u[j]·c[j] +
// u[partner(j)]·s[j] (y = Λ(s) u), or with kTranspose y[j] = u[j]·c[j] − u[partner(j)]·s[j]
// (y = Λ(s)ᵀ u). The odd last channel is copied. u, y: [D].
template <LrpePairing kPairing, bool kTranspose, typename T>
inline void rotate_pairs(const T* __restrict u, const T* __restrict cs, const T* __restrict sn,
                         T* __restrict y, int64_t d) {
  const int64_t m = d / 2;
  if constexpr (kPairing == LrpePairing::kAdjacent) {
    for (int64_t k = 0; k < m; ++k) {
      const T a = u[2 * k], b = u[2 * k + 1];
      if constexpr (kTranspose) {
        y[2 * k] = a * cs[2 * k] - b * sn[2 * k];
        y[2 * k + 1] = b * cs[2 * k + 1] - a * sn[2 * k + 1];
      } else {
        y[2 * k] = a * cs[2 * k] + b * sn[2 * k];
        y[2 * k + 1] = b * cs[2 * k + 1] + a * sn[2 * k + 1];
      }
    }
  } else {
    // Halves: a = u[0, m), b = u[m, 2m).
    const T* a = u;
    const T* b = u + m;
    for (int64_t k = 0; k < m; ++k) {
      y[k] = kTranspose ? a[k] * cs[k] - b[k] * sn[k] : a[k] * cs[k] + b[k] * sn[k];
    }
    for (int64_t k = 0; k < m; ++k) {
      y[m + k] =
          kTranspose ? b[k] * cs[m + k] - a[k] * sn[m + k] : b[k] * cs[m + k] + a[k] * sn[m + k];
    }
  }
  if (d % 2 == 1) y[d - 1] = u[d - 1];
}

// acc[j] += pos·u[partner(j)]·gu[j] over the 2m paired channels (Type 2 θ gradient: pair k
// gets acc[i1] − acc[i0] = Σ pos(u[i0] gu[i1] − u[i1] gu[i0]) = Σ pos(g1 y0 − g0 y1)).
template <LrpePairing kPairing, typename T>
inline void accumulate_pair_products(const T* __restrict u, const T* __restrict gu, T pos,
                                     T* __restrict acc, int64_t d) {
  const int64_t m = d / 2;
  if constexpr (kPairing == LrpePairing::kAdjacent) {
    for (int64_t k = 0; k < m; ++k) {
      acc[2 * k] += pos * (u[2 * k + 1] * gu[2 * k]);
      acc[2 * k + 1] += pos * (u[2 * k] * gu[2 * k + 1]);
    }
  } else {
    for (int64_t k = 0; k < m; ++k) {
      acc[k] += pos * (u[k + m] * gu[k]);
      acc[k + m] += pos * (u[k] * gu[k + m]);
    }
  }
}

// gx *= dφ/dx given φ = 1 + elu(x): 1 where φ > 1 (x > 0), else φ = e^x; NaN stays NaN. The
// same product as unary_backward's, so the result has the composed ops' bits. Branch-free for
// f32: a branch on the sign of x mispredicts on about every other element (it made the backward
// ~6× slower than without φ). phi, gx: [D].
template <typename T>
inline void scale_by_one_plus_elu_slope(const T* __restrict phi, T* __restrict gx, int64_t d) {
  if constexpr (std::is_same_v<T, float>) {
#pragma omp simd
    for (int64_t j = 0; j < d; ++j) gx[j] = gx[j] * vecmath::one_plus_elu_slope(phi[j]);
  } else {
    for (int64_t j = 0; j < d; ++j) gx[j] = gx[j] * (phi[j] > T(1) ? T(1) : phi[j]);
  }
}

// Shared, read-only state of one call.
template <typename T>
struct RowContext {
  const PositionTables<T>* tables;
  const T* w;  // [D] when Householder
  int64_t d;
  int64_t n;
  int64_t offset;
  // Row r of matrix g (row g·N + r) of x starts at x_at[g] + r·x_ld, and of dx (backward) at
  // dx_at[g] + r·dx_ld: views with unit-stride rows are read and written in place.
  const int64_t* x_at;
  int64_t x_ld;
  const int64_t* dx_at;
  int64_t dx_ld;
  // φ = 1+elu applied to x first (config.input_one_plus_elu).
  bool one_plus_elu;
};

// φ = 1 + elu over a row: y = φ(x), x, y: [D]. f32 through vecmath's element form, inlined into
// the build's row loop (the bits of unary's kernel of the same build: the composed ops' bits);
// f64 the expression unary evaluates.
template <typename T>
inline void one_plus_elu_row(const T* __restrict x, T* __restrict y, int64_t d) {
  if constexpr (std::is_same_v<T, float>) {
#pragma omp simd
    for (int64_t j = 0; j < d; ++j) y[j] = vecmath::one_plus_elu(x[j]);
  } else {
    for (int64_t j = 0; j < d; ++j) y[j] = x[j] > T(0) ? x[j] + T(1) : std::exp(x[j]);
  }
}

// D of the call: the compile-time constant of a fixed-dimension variant.
template <typename V, typename T>
inline int64_t dim_of(const RowContext<T>& ctx) {
  return V::dim > 0 ? V::dim : ctx.d;
}

// u = P x for one row (xw = x·w for Householder); returns the row to use as u: x itself
// for the identity, else scratch. x, scratch: [D].
template <typename V, typename T>
inline const T* apply_p(const RowContext<T>& ctx, const T* x, T xw, T* scratch) {
  if constexpr (V::p == LrpeP::kIdentity) {
    return x;
  } else if constexpr (V::p == LrpeP::kHouseholder) {
    axpy(x, T(-2) * xw, ctx.w, scratch, dim_of<V>(ctx));
    return scratch;
  } else {
    const int64_t* idx = ctx.tables->odd_even.data();
    for (int64_t j = 0; j < dim_of<V>(ctx); ++j) scratch[j] = x[idx[j]];
    return scratch;
  }
}

// y = Λ(s) u for the row at position index r. u: [D], y: [F].
template <typename V, typename T>
inline void core_forward(const RowContext<T>& ctx, int64_t r, const T* u, T* y) {
  const PositionTables<T>& t = *ctx.tables;
  const int64_t d = dim_of<V>(ctx);
  if constexpr (V::core == LrpeCore::kUnitary) {
    const T* cs = t.cos.data() + r * t.width;
    const T* sn = t.sin.data() + r * t.width;
    T* yc = y;      // cos half
    T* ys = y + d;  // sin half
    for (int64_t j = 0; j < d; ++j) yc[j] = u[j] * cs[j];
    for (int64_t j = 0; j < d; ++j) ys[j] = u[j] * sn[j];
  } else if constexpr (V::core == LrpeCore::kOrthogonal) {
    rotate_pairs<V::pairing, false>(u, t.cos.data() + r * t.width, t.sin.data() + r * t.width, y,
                                    d);
  } else {
    const int64_t* pp = t.perm_power.data() + r * d;
    for (int64_t j = 0; j < d; ++j) y[j] = u[pp[j]];
  }
}

template <typename V, typename T>
void forward_rows(const RowContext<T>& ctx, const T* x, T* y, int64_t row_begin, int64_t row_end) {
  if (row_begin >= row_end) return;  // also N = 0, where row % N is undefined
  const int64_t d = dim_of<V>(ctx);
  const int64_t f = V::core == LrpeCore::kUnitary ? 2 * d : d;
  std::vector<T> scratch(d), phi(ctx.one_plus_elu ? d : 0);
  int64_t r = row_begin % ctx.n;  // position index of the row (no division per row)
  int64_t g = row_begin / ctx.n;  // matrix of the row
  for (int64_t row = row_begin; row < row_end; ++row) {
    const T* xr = x + ctx.x_at[g] + r * ctx.x_ld;
    if (ctx.one_plus_elu) {
      one_plus_elu_row(xr, phi.data(), d);
      xr = phi.data();
    }
    const T xw = V::p == LrpeP::kHouseholder ? dot(xr, ctx.w, d) : T(0);
    core_forward<V>(ctx, r, apply_p<V>(ctx, xr, xw, scratch.data()), y + row * f);
    if (++r == ctx.n) {
      r = 0;
      ++g;
    }
  }
}

// Rows are split into a fixed number of blocks (not threads), so the θ / w partial sums, and
// therefore the result, do not depend on the thread count.
int64_t num_blocks(int64_t rows) {
  return std::max<int64_t>(1, std::min<int64_t>(rows, 64));
}

// Rows whose θ / w gradient terms are summed in T (lane-wise, so the per-element loops
// vectorise) before they are added to the block's double accumulators. Error bound for
// T = float, u = 2^-24: a flushed partial is a sum of at most 16 terms t_i = pos·u·gu (two
// roundings each), so it is within (16 + 2)·u·Σ|t_i| ≈ 1.1e-6·Σ|t_i| of the exact sum of the
// float inputs' terms (recursive summation); adding the partials in double costs ~2^-53 per
// addition, and Type 2's acc[i1] − acc[i0] is formed in double. Summing every term in double
// (the old kernel) is within ~3u·Σ|t_i|; both are far below what the float rounding of the
// inputs themselves does to the terms.
constexpr int64_t kFlushRows = 16;

// Per-block accumulation state of the backward.
template <typename T>
struct GradAccumulators {
  std::vector<T> theta;  // [table width]: pos-weighted terms, not yet paired (Type 2)
  std::vector<T> w;      // [D]: xw·gu + guw·x (times −2 on flush)
};

template <typename V, typename T>
void flush_accumulators(const RowContext<T>& ctx, GradAccumulators<T>& acc, double* gth,
                        double* gw) {
  if constexpr (V::core == LrpeCore::kUnitary) {
    for (int64_t j = 0; j < dim_of<V>(ctx); ++j) gth[j] += static_cast<double>(acc.theta[j]);
  } else if constexpr (V::core == LrpeCore::kOrthogonal) {
    const int64_t m = dim_of<V>(ctx) / 2;
    for (int64_t k = 0; k < m; ++k) {
      const int64_t i0 = V::pairing == LrpePairing::kAdjacent ? 2 * k : k;
      const int64_t i1 = V::pairing == LrpePairing::kAdjacent ? 2 * k + 1 : k + m;
      gth[k] += static_cast<double>(acc.theta[i1]) - static_cast<double>(acc.theta[i0]);
    }
  }
  std::fill(acc.theta.begin(), acc.theta.end(), T(0));
  if constexpr (V::p == LrpeP::kHouseholder) {
    for (int64_t j = 0; j < dim_of<V>(ctx); ++j) gw[j] += -2.0 * static_cast<double>(acc.w[j]);
    std::fill(acc.w.begin(), acc.w.end(), T(0));
  }
}

// Backward over rows [row_begin, row_end) of one block; θ / w gradients added to gth [m] and
// gw [D] (double).
template <typename V, typename T>
void backward_rows(const RowContext<T>& ctx, const T* x, const T* grad_y, T* dx, double* gth,
                   double* gw, int64_t row_begin, int64_t row_end) {
  if (row_begin >= row_end) return;  // also N = 0, where row % N is undefined
  const PositionTables<T>& t = *ctx.tables;
  const int64_t d = dim_of<V>(ctx);
  const int64_t f = V::core == LrpeCore::kUnitary ? 2 * d : d;
  std::vector<T> scratch_u(d), scratch_gu(d), phi(ctx.one_plus_elu ? d : 0);
  GradAccumulators<T> acc;
  acc.theta.assign(t.width, T(0));
  if constexpr (V::p == LrpeP::kHouseholder) acc.w.assign(d, T(0));
  int64_t r = row_begin % ctx.n;   // position index of the row (no division per row)
  int64_t gi = row_begin / ctx.n;  // matrix of the row
  for (int64_t row = row_begin; row < row_end; ++row) {
    const T pos = static_cast<T>(ctx.offset + r);
    const T* xr = x + ctx.x_at[gi] + r * ctx.x_ld;
    if (ctx.one_plus_elu) {  // LRPE's input is φ(x), recomputed rather than stored
      one_plus_elu_row(xr, phi.data(), d);
      xr = phi.data();
    }
    const T* gy = grad_y + row * f;
    T* gx = dx + ctx.dx_at[gi] + r * ctx.dx_ld;
    const T xw = V::p == LrpeP::kHouseholder ? dot(xr, ctx.w, d) : T(0);
    const T* u = apply_p<V>(ctx, xr, xw, scratch_u.data());
    // gu = Λ(s)ᵀ gy (written straight into gx when P is the identity), and θ's gradient.
    T* gu = V::p == LrpeP::kIdentity ? gx : scratch_gu.data();
    if constexpr (V::core == LrpeCore::kUnitary) {
      const T* cs = t.cos.data() + r * t.width;
      const T* sn = t.sin.data() + r * t.width;
      const T* gc = gy;      // gradient of the cos half
      const T* gs = gy + d;  // gradient of the sin half
      T* ath = acc.theta.data();
      for (int64_t j = 0; j < d; ++j) gu[j] = gc[j] * cs[j] + gs[j] * sn[j];
      // s·(gσ·yc − gc·yσ) with yc = u cos, yσ = u sin.
      for (int64_t j = 0; j < d; ++j) ath[j] += pos * (u[j] * (gs[j] * cs[j] - gc[j] * sn[j]));
    } else if constexpr (V::core == LrpeCore::kOrthogonal) {
      rotate_pairs<V::pairing, true>(gy, t.cos.data() + r * t.width, t.sin.data() + r * t.width, gu,
                                     d);
      accumulate_pair_products<V::pairing>(u, gu, pos, acc.theta.data(), d);
    } else {
      const int64_t* pp = t.perm_power.data() + r * d;
      for (int64_t j = 0; j < d; ++j) gu[pp[j]] = gy[j];
    }
    // gx = Pᵀ gu, and w's gradient.
    if constexpr (V::p == LrpeP::kHouseholder) {
      const T guw = dot(gu, ctx.w, d);
      axpy(gu, T(-2) * guw, ctx.w, gx, d);
      T* aw = acc.w.data();
      for (int64_t j = 0; j < d; ++j) aw[j] += xw * gu[j] + guw * xr[j];
    } else if constexpr (V::p == LrpeP::kOddEven) {
      const int64_t* idx = t.odd_even.data();
      for (int64_t j = 0; j < d; ++j) gx[idx[j]] = gu[j];
    }
    if (ctx.one_plus_elu) scale_by_one_plus_elu_slope(phi.data(), gx, d);
    if ((row - row_begin) % kFlushRows == kFlushRows - 1 || row + 1 == row_end) {
      flush_accumulators<V>(ctx, acc, gth, gw);
    }
    if (++r == ctx.n) {
      r = 0;
      ++gi;
    }
  }
}

// ---- Instruction-set builds ----
//
// The f32 row loops and the cos / sin tables are compiled three times, for AVX-512,
// AVX2+FMA and plain x86-64 (SSE2) through vecmath's builds (backend/cpu/isa_build.h), and
// picked at run time (vecmath::best_isa(), capped by ROTA_MAX_CPU_ISA); `flatten` inlines the
// generic code above into each build so it is vectorised with that build's instructions. The builds
// may differ in the last bits (FMA contraction) but each is deterministic. The f64 kernels
// (references and gradient checks) always use the portable build.

// The instruction set the f32 kernels use, chosen once.
Isa f32_isa() {
  static const Isa chosen = vecmath::best_isa();
  return chosen;
}

// Calls f(Build{}) with vecmath's build for isa (backend/cpu/isa_build.h); f64 always gets the
// portable build.
template <typename T, typename F>
void with_build(Isa isa, F&& f) {
  if constexpr (std::is_same_v<T, float>) {
    vecmath::with_build(isa, f);
  } else {
    f(vecmath::PortableBuild{});
  }
}

template <typename T>
PositionTables<T> build_tables(const LrpeKernelConfig& c, const LrpeDims& s, const Tensor& theta,
                               const Tensor& permutation, Isa isa) {
  PositionTables<T> t;
  if (c.core == LrpeCore::kPermutation) {
    t.perm_power = permutation_power_table(permutation, c.offset, s.n);
  } else {
    const std::vector<double> th = theta.to_double_vector();
    // The fast cos / sin when every |s·θ_k| is in its range (false for NaN or inf).
    const double last_position = static_cast<double>(c.offset + s.n);
    bool fast = std::is_same_v<T, float>;
    for (double v : th) fast = fast && std::abs(v) * last_position <= kFastAngleLimit;
    t.width = c.core == LrpeCore::kUnitary ? s.m : 2 * s.m;
    t.cos.resize(s.n * t.width);
    t.sin.resize(s.n * t.width);
    const int64_t m = s.m;
    const bool half = c.pairing == LrpePairing::kHalf;
    // cos and sin of pos·θ_k, k in [0, m), into cos_out and sin_out.
    auto cos_sin_row = [&](double pos, T* cos_out, T* sin_out) {
      if constexpr (std::is_same_v<T, float>) {
        if (fast) {
          with_build<T>(isa, [&](auto build) {
            decltype(build)::template of<&fast_cos_sin_row>(th.data(), m, pos, cos_out, sin_out);
          });
          return;
        }
      }
      for (int64_t k = 0; k < m; ++k) {
        cos_out[k] = static_cast<T>(std::cos(pos * th[k]));
        sin_out[k] = static_cast<T>(std::sin(pos * th[k]));
      }
    };
    // Threaded only for long tables (N·m >= 32768 angles, 20-50 µs on one thread): a parallel
    // region of its own costs more than a short table when the cores are busy.
    parallel_for(s.n, m, [&](int64_t r0, int64_t r1) {
      std::vector<T> cs(m), sn(m);
      for (int64_t r = r0; r < r1; ++r) {
        const double pos = static_cast<double>(c.offset + r);
        T* cr = t.cos.data() + r * t.width;
        T* sr = t.sin.data() + r * t.width;
        if (c.core == LrpeCore::kUnitary) {
          cos_sin_row(pos, cr, sr);
          continue;
        }
        cos_sin_row(pos, cs.data(), sn.data());
        for (int64_t k = 0; k < m; ++k) {
          const int64_t i0 = half ? k : 2 * k;
          const int64_t i1 = half ? k + m : 2 * k + 1;
          cr[i0] = cs[k];
          cr[i1] = cs[k];
          sr[i0] = -sn[k];
          sr[i1] = sn[k];
        }
      }
    });
  }
  if (c.p == LrpeP::kOddEven) {
    const int64_t h = (s.d + 1) / 2;
    t.odd_even.resize(s.d);
    for (int64_t j = 0; j < s.d; ++j) t.odd_even[j] = j % 2 == 0 ? j / 2 : h + (j - 1) / 2;
  }
  return t;
}

int64_t row_stride(const Tensor& x) {
  return x.strides()[x.dim() - 2];
}

}  // namespace

Tensor lrpe_forward(const LrpeKernelConfig& c, const Tensor& x_in, const Tensor& theta,
                    const Tensor& w_in, const Tensor& permutation) {
  const char* op = "lrpe";
  const LrpeDims s = check_inputs(op, c, x_in, theta, w_in, permutation);
  const Tensor x = with_unit_stride_rows(x_in);
  const std::vector<int64_t> x_at = matrix_offsets(x.shape(), x.strides());
  Shape out_shape = x.shape();
  out_shape.back() = s.f;
  Tensor y = Tensor::empty(out_shape, x.dtype());
  dispatch_floating(x.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    const Isa isa = f32_isa();
    const PositionTables<T> t = build_tables<T>(c, s, theta, permutation, isa);
    const Tensor w = c.p == LrpeP::kHouseholder ? w_in.contiguous() : Tensor();
    const RowContext<T> ctx{&t,
                            w.defined() ? w.data<T>() : nullptr,
                            s.d,
                            s.n,
                            c.offset,
                            x_at.data(),
                            row_stride(x),
                            nullptr,
                            0,
                            c.input_one_plus_elu};
    const T* px = x.data<T>();
    T* py = y.data<T>();
    with_variant(c, s.d, [&](auto variant) {
      using V = decltype(variant);
      with_build<T>(isa, [&](auto build) {
        parallel_for(s.rows, 4 * s.f, [&](int64_t r0, int64_t r1) {
          decltype(build)::template of<&forward_rows<V, T>>(ctx, px, py, r0, r1);
        });
      });
    });
  });
  return y;
}

LrpeGrads lrpe_backward(const LrpeKernelConfig& c, const Tensor& x_in, const Tensor& theta,
                        const Tensor& w_in, const Tensor& permutation, const Tensor& grad_y) {
  const char* op = "lrpe_backward";
  const LrpeDims s = check_inputs(op, c, x_in, theta, w_in, permutation);
  Shape y_shape = x_in.shape();
  y_shape.back() = s.f;
  ROTA_CHECK(grad_y.shape() == y_shape, "{}: grad {} for output {}", op, shape_str(grad_y.shape()),
             shape_str(y_shape));
  const Tensor x = with_unit_stride_rows(x_in);
  const Tensor g = grad_y.contiguous();
  LrpeGrads grads;
  grads.dx = empty_in_layout_of(x);
  const std::vector<int64_t> x_at = matrix_offsets(x.shape(), x.strides());
  const std::vector<int64_t> dx_at = matrix_offsets(grads.dx.shape(), grads.dx.strides());
  dispatch_floating(x.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    const Isa isa = f32_isa();
    const PositionTables<T> t = build_tables<T>(c, s, theta, permutation, isa);
    const bool householder = c.p == LrpeP::kHouseholder;
    const Tensor w = householder ? w_in.contiguous() : Tensor();
    const RowContext<T> ctx{&t,
                            householder ? w.data<T>() : nullptr,
                            s.d,
                            s.n,
                            c.offset,
                            x_at.data(),
                            row_stride(x),
                            dx_at.data(),
                            row_stride(grads.dx),
                            c.input_one_plus_elu};
    const T* px = x.data<T>();
    const T* pg = g.data<T>();
    T* pdx = grads.dx.data<T>();
    const int64_t blocks = num_blocks(s.rows);
    // Partial sums per block: θ [blocks, m] and w [blocks, D], accumulated in double.
    std::vector<double> theta_partial(blocks * s.m, 0.0);
    std::vector<double> w_partial(householder ? blocks * s.d : 0, 0.0);
    with_variant(c, s.d, [&](auto variant) {
      using V = decltype(variant);
      with_build<T>(isa, [&](auto build) {
        parallel_for(blocks, (s.rows / blocks + 1) * 6 * s.f, [&](int64_t b0, int64_t b1) {
          for (int64_t b = b0; b < b1; ++b) {
            decltype(build)::template of<&backward_rows<V, T>>(
                ctx, px, pg, pdx, theta_partial.data() + b * s.m,
                householder ? w_partial.data() + b * s.d : nullptr, s.rows * b / blocks,
                s.rows * (b + 1) / blocks);
          }
        });
      });
    });
    // Deterministic reduction over blocks in block order.
    auto reduce_blocks = [&](const std::vector<double>& partial, int64_t width) {
      std::vector<double> total(width, 0.0);
      for (int64_t b = 0; b < blocks; ++b) {
        for (int64_t j = 0; j < width; ++j) total[j] += partial[b * width + j];
      }
      return tensor_from(total, {width}, x.dtype());
    };
    if (c.core != LrpeCore::kPermutation) grads.dtheta = reduce_blocks(theta_partial, s.m);
    if (householder) grads.dw = reduce_blocks(w_partial, s.d);
  });
  return grads;
}

}  // namespace rota::backend
