// Gated linear attention kernels: OpenMP over groups, small_gemm blocks, every exp of a value ≤ 0.
#include "framework/backend/fused/gated_linear_attention.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "framework/backend/cpu/dispatch.h"
#include "framework/backend/cpu/isa_build.h"
#include "framework/backend/cpu/parallel.h"
#include "framework/backend/cpu/row_kernels.h"
#include "framework/backend/cpu/small_gemm.h"
#include "framework/backend/cpu/vector_math.h"
#include "framework/backend/fused/attention_state.h"
#include "framework/backend/fused/document_ranges.h"
#include "framework/tensor/strided_loop.h"

namespace rota::backend {

namespace {

// Rows of a per-channel diagonal block: its pairs (i, j) take one product of step decays per
// channel each, so the cost per token grows with it; 16 is the GLA paper's secondary chunk.
constexpr int64_t kSubBlock = 16;
// Rows of a scalar-gate score block (as the plain kernel's kRowBlock).
constexpr int64_t kRowBlock = 32;

struct GlaDims {
  int64_t groups;  // G: product of leading dims
  int64_t n;       // N: sequence length
  int64_t f;       // F: feature dim of q, k
  int64_t d;       // D: value dim
  int64_t gw;      // gate width: F (per channel) or 1 (scalar per step)
};

GlaDims check_dims(const char* op, const Tensor& q, const Tensor& k, const Tensor& v,
                   const Tensor& gate) {
  bool ok = q.dim() >= 2 && q.shape() == k.shape() && v.dim() == q.dim() && gate.dim() == q.dim();
  for (int64_t i = 0; ok && i + 1 < q.dim(); ++i) {
    ok = q.size(i) == v.size(i) && q.size(i) == gate.size(i);
  }
  ok = ok && (gate.size(-1) == q.size(-1) || gate.size(-1) == 1);
  ROTA_CHECK(ok,
             "{}: q {}, k {}, v {}, log_gate {}: expected q, k [..., N, F], v [..., N, D] and "
             "log_gate [..., N, F] or [..., N, 1] with the same leading dims",
             op, shape_str(q.shape()), shape_str(k.shape()), shape_str(v.shape()),
             shape_str(gate.shape()));
  ROTA_CHECK(q.dtype() == k.dtype() && q.dtype() == v.dtype() && q.dtype() == gate.dtype(),
             "{}: dtypes of q {}, k {}, v {}, log_gate {} differ", op, dtype_name(q.dtype()),
             dtype_name(k.dtype()), dtype_name(v.dtype()), dtype_name(gate.dtype()));
  GlaDims dims;
  dims.n = q.size(-2);
  dims.f = q.size(-1);
  dims.d = v.size(-1);
  dims.gw = gate.size(-1);
  dims.groups = 1;
  for (int64_t i = 0; i + 2 < q.dim(); ++i) dims.groups *= q.size(i);
  return dims;
}

// Rows of one group: the first row and the distance between rows (elements).
template <typename T>
struct Rows {
  T* at;
  int64_t ld;
  T* row(int64_t i) const { return at + i * ld; }
};

// Group g's rows of x (rows unit-stride: with_unit_stride_rows). A single row's stride is
// arbitrary, so it gets the row width the block products expect as a leading dim.
template <typename T>
Rows<T> slice_rows(const Tensor& x, const std::vector<int64_t>& offsets, int64_t g) {
  const int64_t rows = x.size(x.dim() - 2);
  const int64_t ld = rows == 1 ? x.size(x.dim() - 1) : x.strides()[x.dim() - 2];
  return {x.data<std::remove_const_t<T>>() + offsets[g], ld};
}

// The operands as the kernels read them, with every group's first-row offset; x is the output
// (forward) or dO (backward).
struct Operands {
  Tensor q, k, v, gate, x;
  std::vector<int64_t> q_at, k_at, v_at, gate_at, x_at;
};

Operands operands(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& gate,
                  const Tensor& x) {
  Operands in;
  in.q = with_unit_stride_rows(q);
  in.k = with_unit_stride_rows(k);
  in.v = with_unit_stride_rows(v);
  in.gate = with_unit_stride_rows(gate);
  in.x = with_unit_stride_rows(x);
  in.q_at = matrix_offsets(in.q.shape(), in.q.strides());
  in.k_at = matrix_offsets(in.k.shape(), in.k.strides());
  in.v_at = matrix_offsets(in.v.shape(), in.v.strides());
  in.gate_at = matrix_offsets(in.gate.shape(), in.gate.strides());
  in.x_at = matrix_offsets(in.x.shape(), in.x.strides());
  return in;
}

// 1 when the gate is not finite or is > 0 (+0 and −0 pass), from the bits alone: integer
// compares vectorise where float compares (kept as branches under -ftrapping-math) do not.
template <typename T>
inline auto bad_gate(T value) {
  using U = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  constexpr U kSign = U(1) << (sizeof(T) * 8 - 1);
  constexpr U kExponent = sizeof(T) == 4 ? U(0x7f800000u) : U(0x7ff0000000000000ull);
  const U bits = std::bit_cast<U>(value);
  const U positive = static_cast<U>((bits & kSign) == 0) & static_cast<U>(bits != 0);
  const U not_finite = static_cast<U>((bits & kExponent) == kExponent);
  return positive | not_finite;
}

// Refuses gates that are not finite or are positive (a decay above 1 would grow without bound
// and break the ≤ 1 bound every factor relies on), naming the first offender.
template <typename T>
void check_gate_values(const char* op, const Operands& in, const GlaDims& s) {
  for (int64_t g = 0; g < s.groups; ++g) {
    const Rows<const T> rows = slice_rows<const T>(in.gate, in.gate_at, g);
    for (int64_t t = 0; t < s.n; ++t) {
      const T* row = rows.row(t);
      decltype(bad_gate(T(0))) bad = 0;
#pragma omp simd reduction(| : bad)
      for (int64_t x = 0; x < s.gw; ++x) bad |= bad_gate(row[x]);
      if (!bad) continue;
      for (int64_t x = 0; x < s.gw; ++x) {
        ROTA_CHECK(std::isfinite(row[x]) && row[x] <= T(0),
                   "{}: log_gate {} must be finite and <= 0 (a decay in (0, 1]); found {} in "
                   "group {}, position {}, channel {}",
                   op, shape_str(in.gate.shape()), static_cast<double>(row[x]), g, t, x);
      }
    }
  }
}

// The output of a [B, H, N, D] attention: stored as [B, N, H, D] and returned as its permuted
// view (merging heads back is free), as the plain kernel does; other ranks are dense.
Tensor attention_output(const Tensor& v) {
  if (v.dim() != 4) return Tensor::empty(v.shape(), v.dtype());
  return Tensor::empty({v.size(0), v.size(2), v.size(1), v.size(3)}, v.dtype())
      .permute({0, 2, 1, 3});
}

using small_gemm::block_product;

// Per-thread scratch, sized for chunk C, features F, values D and gate width.
template <typename T>
struct Scratch {
  std::vector<T> state;     // S or R: [F, D]
  std::vector<T> state_t;   // its transpose: [D, F]
  std::vector<double> cum;  // local cumulative gates of a chunk: [C + 1, gw], row 0 = 0
  std::vector<T> qh;        // gated query rows: [C, F]
  std::vector<T> kh;        // gated key rows: [C, F]
  std::vector<T> packed;    // a chunk of an input transposed: [max(F, D), C]
  std::vector<T> packed2;   // another: [max(F, D), C]
  std::vector<T> alpha;     // exp factors of query rows: [C, F]
  std::vector<T> beta;      // exp factors of key rows: [C, F]
  std::vector<T> scores;    // [max(kRowBlock, kSubBlock), C]
  std::vector<T> dscores;   // [max(kRowBlock, kSubBlock), C]
  std::vector<T> expo;      // pairwise decays of one row of a diagonal block: [kSubBlock, F]
  std::vector<T> steps;     // the decays e^(g_t) of a diagonal block's rows: [kSubBlock, F]
  std::vector<T> temp;      // [C, max(F, D)]
  std::vector<T> decay;     // a scalar-gate decay block: [kRowBlock, C]

  Scratch(const GlaDims& s, int64_t chunk) {
    const int64_t c = std::min(chunk, std::max<int64_t>(s.n, 1));
    const int64_t w = std::max(s.f, s.d);
    const int64_t rb = std::max(kRowBlock, kSubBlock);
    state.resize(s.f * s.d);
    state_t.resize(s.f * s.d);
    cum.resize((c + 1) * s.gw);
    qh.resize(c * s.f);
    kh.resize(c * s.f);
    packed.resize(w * c);
    packed2.resize(w * c);
    alpha.resize(c * s.f);
    beta.resize(c * s.f);
    scores.resize(rb * c);
    dscores.resize(rb * c);
    expo.resize(kSubBlock * s.f);
    steps.resize(kSubBlock * s.f);
    temp.resize(c * w);
    decay.resize(kRowBlock * c);
  }
};

// Gates are clamped at this floor when summed: e^-1000 is 0 in f64 as in f32, so every factor
// containing such a step is 0 either way, while the f64 sums of a chunk keep the precision of
// the small gates next to a huge one (a gate of -1e30 would swamp them).
constexpr double kGateFloor = -1000.0;

// max(g, kGateFloor) in f64 for a checked gate (finite, ≤ 0), by integer compares and masks so
// the loop vectorises (a float max stays a branch under -ftrapping-math): the magnitude bits of
// non-positive floats order like |g|.
template <typename T>
inline double clamped_gate(T g) {
  using U = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  constexpr U kSign = U(1) << (sizeof(T) * 8 - 1);
  const U bits = std::bit_cast<U>(g);
  const U below = U(0) - static_cast<U>((bits & ~kSign) > std::bit_cast<U>(T(-kGateFloor)));
  const U floor_bits = std::bit_cast<U>(T(kGateFloor));
  return static_cast<double>(std::bit_cast<T>((bits & ~below) | (floor_bits & below)));
}

// Local cumulative gates of chunk [c0, c0 + len) in f64: cum[u + 1] = Σ_{c0≤t≤c0+u} g_t, cum[0] =
// 0, rows of gw. Every exponent below is a difference cum[a] − cum[b] with a ≥ b (so ≤ 0), taken
// in f64 before rounding to T: no cancellation against the chunk's total.
template <typename T>
void local_cumsum(Rows<const T> gate, int64_t c0, int64_t len, int64_t gw, double* cum) {
  std::fill(cum, cum + gw, 0.0);
  for (int64_t u = 0; u < len; ++u) {
    const T* g = gate.row(c0 + u);
    const double* prev = cum + u * gw;
    double* next = cum + (u + 1) * gw;
#pragma omp simd
    for (int64_t x = 0; x < gw; ++x) {
      next[x] = prev[x] + clamped_gate(g[x]);
    }
  }
}

// factor[r, f] = exp(cum[hi(r)] − cum[lo(r)]) for rows r < rows ([rows, F], dense; a scalar gate
// broadcasts over F), then, when src is set, dst[r, f] = src_r[f] · factor[r, f] (dst rows
// dense, or transposed into dst[f · rows + r]).
template <typename T, typename Hi, typename Lo>
void gated_rows(const double* cum, int64_t gw, int64_t f, int64_t rows, Hi hi, Lo lo, T* factor,
                Rows<const T> src, int64_t r0, T* dst, bool transposed) {
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t a = hi(r), b = lo(r);
    T* e = factor + r * f;
    if (gw == 1) {
      T scalar = static_cast<T>(cum[a] - cum[b]);
      exp_inplace(&scalar, 1);
      std::fill(e, e + f, scalar);
    } else {
#pragma omp simd
      for (int64_t x = 0; x < f; ++x) e[x] = static_cast<T>(cum[a * gw + x] - cum[b * gw + x]);
      exp_inplace(e, f);
    }
    if (!src.at) continue;
    const T* in = src.row(r0 + r);
    if (transposed) {
      for (int64_t x = 0; x < f; ++x) dst[x * rows + r] = e[x] * in[x];
    } else {
#pragma omp simd
      for (int64_t x = 0; x < f; ++x) dst[r * f + x] = e[x] * in[x];
    }
  }
}

// S[F, D] ← diag(exp(B_last)) S: the chunk's total decay (cum row len).
template <typename T>
void decay_state(T* state, const double* cum, int64_t len, int64_t gw, int64_t f, int64_t d,
                 T* buffer) {
  gated_rows<T>(
      cum, gw, f, 1, [&](int64_t) { return len; }, [](int64_t) { return 0; }, buffer,
      Rows<const T>{nullptr, 0}, 0, nullptr, false);
  for (int64_t x = 0; x < f; ++x) {
    const T a = buffer[x];
#pragma omp simd
    for (int64_t y = 0; y < d; ++y) state[x * d + y] *= a;
  }
}

// Moves the key state past the chunk: S = diag(exp(B_last)) S + Σ_u (k_u ⊙ exp(B_last −
// B_u))ᵀ v_u, with B relative to the row before the chunk (B_u = cum[u + 1], B_last = cum[len]).
// k: [N, F], v: [N, D], S: [F, D].
template <typename T>
void advance_state(T* state, Rows<const T> k, Rows<const T> v, int64_t c0, int64_t len,
                   Scratch<T>& w, const GlaDims& s) {
  const double* cum = w.cum.data();
  decay_state(state, cum, len, s.gw, s.f, s.d, w.temp.data());
  // kh[len, F] = k_u ⊙ exp(B_last − B_u)
  gated_rows<T>(
      cum, s.gw, s.f, len, [&](int64_t) { return len; }, [](int64_t u) { return u + 1; },
      w.alpha.data(), k, c0, w.kh.data(), false);
  // S[F, D] += khᵀ[F, len] · V_c[len, D]
  block_product(s.f, s.d, len, w.kh.data(), int64_t{1}, s.f, v.row(c0), v.ld, state, s.d, true);
}

// ---- Diagonal sub-blocks ----

// steps[t, F] = e^(g) of the rows u0 + t < u1 of the chunk (from the f64 sums, so the clamped
// gates): each ≤ 1.
template <typename T>
void step_decays(const double* cum, int64_t u0, int64_t u1, int64_t f, T* steps) {
  for (int64_t t = u0; t < u1; ++t) {
    const double* hi = cum + (t + 1) * f;
    const double* lo = cum + t * f;
    T* out = steps + (t - u0) * f;
#pragma omp simd
    for (int64_t x = 0; x < f; ++x) out[x] = static_cast<T>(hi[x] - lo[x]);
  }
  exp_inplace(steps, (u1 - u0) * f);
}

// e[c, F] = e^(B_i − B_j) for row i = u0 + r of a diagonal sub-block and its keys j = u0 + c < i,
// as products of the step decays (each ≤ 1, so no product can overflow): e[r − 1] = a_i and
// e[c] = e[c + 1] ⊙ a_(j+1), with a_t = steps[t − u0]. One exp per row and channel instead of
// one per pair; the products round like a sum of as many exponents would.
template <typename T>
void pair_decays(const T* steps, int64_t r, int64_t f, T* e) {
  if (r == 0) return;
  std::copy(steps + r * f, steps + (r + 1) * f, e + (r - 1) * f);
  for (int64_t c = r - 2; c >= 0; --c) {
    const T* next = e + (c + 1) * f;
    const T* a = steps + (c + 1) * f;
    T* out = e + c * f;
#pragma omp simd
    for (int64_t x = 0; x < f; ++x) out[x] = next[x] * a[x];
  }
}

// ---- Intra-chunk forward ----

// Per-channel gates, chunk rows [c0, c0 + len): o_i = Σ_{c0≤j≤i} Σ_f q_if k_jf e^(B_if − B_jf) v_j.
// Sub-block I = [u0, u1): keys before u0 through the row p = u0 − 1 (q_i ⊙ e^(B_i − B_p) times
// k_j ⊙ e^(B_p − B_j), both ≤ 1), keys inside I pair by pair (pair_decays). q, k: [N, F], v, o:
// [N, D]; o rows of the chunk are overwritten.
template <typename T>
void intra_forward_vector(Rows<const T> q, Rows<const T> k, Rows<const T> v, Rows<T> o, int64_t c0,
                          int64_t len, Scratch<T>& w, const GlaDims& s) {
  const double* cum = w.cum.data();
  const int64_t f = s.f;
  for (int64_t u0 = 0; u0 < len; u0 += kSubBlock) {
    const int64_t u1 = std::min(len, u0 + kSubBlock);
    const int64_t rows = u1 - u0;
    const int64_t cols = u1;      // keys 0..u1−1 of the chunk
    T* scores = w.scores.data();  // [rows, cols]
    if (u0 > 0) {
      // qh[rows, F] = q_i ⊙ e^(B_i − B_p), khᵀ[F, u0] = (k_j ⊙ e^(B_p − B_j))ᵀ; B_p = cum[u0].
      gated_rows<T>(
          cum, f, f, rows, [&](int64_t r) { return u0 + r + 1; }, [&](int64_t) { return u0; },
          w.alpha.data(), q, c0 + u0, w.qh.data(), false);
      gated_rows<T>(
          cum, f, f, u0, [&](int64_t) { return u0; }, [](int64_t j) { return j + 1; },
          w.beta.data(), k, c0, w.packed.data(), true);
      block_product(rows, u0, f, w.qh.data(), f, int64_t{1}, w.packed.data(), u0, scores, cols,
                    false);
    }
    step_decays(cum, u0, u1, f, w.steps.data());
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t i = u0 + r;
      T* row = scores + r * cols;
      const T* qi = q.row(c0 + i);
      // e[c, f] = e^(B_if − B_jf) for keys j = u0 + c < i
      T* e = w.expo.data();
      pair_decays(w.steps.data(), r, f, e);
      for (int64_t c = 0; c < r; ++c) {
        row[u0 + c] = weighted_dot_row(qi, k.row(c0 + u0 + c), e + c * f, f);
      }
      row[i] = dot_row(qi, k.row(c0 + i), f);
      for (int64_t j = i + 1; j < cols; ++j) row[j] = T(0);
    }
    // O[I] = Scores[rows, cols] · V[0:cols]
    block_product(rows, s.d, cols, scores, cols, int64_t{1}, v.row(c0), v.ld, o.row(c0 + u0), o.ld,
                  false);
  }
}

// decay[r, j] = e^(B_i − B_j) for j ≤ i = u0 + r, 0 for j > i (scalar gates; [rows, cols]).
template <typename T>
void scalar_decay_block(const double* cum, int64_t u0, int64_t rows, int64_t cols, T* decay) {
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t i = u0 + r;
    T* row = decay + r * cols;
    for (int64_t j = 0; j <= i; ++j) row[j] = static_cast<T>(cum[i + 1] - cum[j + 1]);
    exp_inplace(row, i + 1);
    for (int64_t j = i + 1; j < cols; ++j) row[j] = T(0);
  }
}

// Scalar gates: O[I] = ((Q_I K_cᵀ) ⊙ decay) V_c, row block by row block, with the masked decay
// matrix e^(B_i − B_j) ≤ 1.
template <typename T>
void intra_forward_scalar(Rows<const T> q, Rows<const T> k, Rows<const T> v, Rows<T> o, int64_t c0,
                          int64_t len, Scratch<T>& w, const GlaDims& s) {
  const double* cum = w.cum.data();
  small_gemm::transpose_into(k.row(c0), len, s.f, k.ld, w.packed.data());  // K_cᵀ [F, len]
  for (int64_t u0 = 0; u0 < len; u0 += kRowBlock) {
    const int64_t u1 = std::min(len, u0 + kRowBlock);
    const int64_t rows = u1 - u0;
    const int64_t cols = u1;
    T* scores = w.scores.data();
    T* decay = w.decay.data();
    block_product(rows, cols, s.f, q.row(c0 + u0), q.ld, int64_t{1}, w.packed.data(), len, scores,
                  cols, false);
    scalar_decay_block(cum, u0, rows, cols, decay);
    for (int64_t x = 0; x < rows * cols; ++x) scores[x] *= decay[x];
    block_product(rows, s.d, cols, scores, cols, int64_t{1}, v.row(c0), v.ld, o.row(c0 + u0), o.ld,
                  false);
  }
}

// One group of the forward. q, k: [N, F], v, o: [N, D], gate: [N, gw]. initial: S₀ [F, D] (the
// state before row 0) or null (zeros); final_state: where S_N [F, D] goes, or null.
template <typename T>
void forward_group(Rows<const T> q, Rows<const T> k, Rows<const T> v, Rows<const T> gate, Rows<T> o,
                   Scratch<T>& w, const GlaDims& s, int64_t chunk, const T* initial,
                   T* final_state) {
  T* state = w.state.data();
  if (initial) {
    std::copy(initial, initial + s.f * s.d, state);
  } else {
    std::fill(state, state + s.f * s.d, T(0));
  }
  for (int64_t c0 = 0; c0 < s.n; c0 += chunk) {
    const int64_t c1 = std::min(s.n, c0 + chunk);
    const int64_t len = c1 - c0;
    local_cumsum(gate, c0, len, s.gw, w.cum.data());
    if (s.gw == 1) {
      intra_forward_scalar(q, k, v, o, c0, len, w, s);
    } else {
      intra_forward_vector(q, k, v, o, c0, len, w, s);
    }
    if (c0 > 0 || initial) {
      // Inter-chunk: o_i += (q_i ⊙ e^(B_i)) S, B relative to the row before the chunk.
      gated_rows<T>(
          w.cum.data(), s.gw, s.f, len, [](int64_t u) { return u + 1; }, [](int64_t) { return 0; },
          w.alpha.data(), q, c0, w.qh.data(), false);
      block_product(len, s.d, s.f, w.qh.data(), s.f, int64_t{1}, state, s.d, o.row(c0), o.ld, true);
    }
    if (c1 < s.n || final_state) advance_state(state, k, v, c0, len, w, s);
  }
  if (final_state) std::copy(state, state + s.f * s.d, final_state);
}

// ---- Backward ----

// Per-channel gates, intra-chunk part of the backward for chunk rows [c0, c0 + len), with dP_ij =
// dO_i·v_j and E_ij = e^(B_i − B_j) ≤ 1 (per channel):
//   dq_i += Σ_{j<i} dP_ij (k_j ⊙ E_ij),  dk_j += Σ_{i>j} dP_ij (q_i ⊙ E_ij)  (pair j = i left out),
//   dv_j += Σ_{i≥j} A_ij dO_i with A_ij = Σ_f q_if k_jf E_ijf.
// Pairs inside a sub-block by pair_decays; query sub-block I against earlier keys through the row
// p = u0 − 1: E_ij = α_i ⊙ β_j, α_i = e^(B_i − B_p), β_j = e^(B_p − B_j). dq, dk: [N, F] dense
// (accumulated), dv: [N, D] rows (accumulated); q, k: [N, F], v, g: [N, D].
template <typename T>
void intra_backward_vector(Rows<const T> q, Rows<const T> k, Rows<const T> v, Rows<const T> g,
                           T* dq, T* dk, Rows<T> dv, int64_t c0, int64_t len, Scratch<T>& w,
                           const GlaDims& s) {
  const double* cum = w.cum.data();
  const int64_t f = s.f, d = s.d;
  small_gemm::transpose_into(v.row(c0), len, d, v.ld, w.packed2.data());  // V_cᵀ [D, len]
  for (int64_t u0 = 0; u0 < len; u0 += kSubBlock) {
    const int64_t u1 = std::min(len, u0 + kSubBlock);
    const int64_t rows = u1 - u0;
    T* a_diag = w.scores.data();  // [rows, rows]
    T* dp = w.dscores.data();     // [rows, rows], then [rows, u0]
    // dP[I, I] = dO_I · V_Iᵀ
    block_product(rows, rows, d, g.row(c0 + u0), g.ld, int64_t{1}, w.packed2.data() + u0, len, dp,
                  rows, false);
    step_decays(cum, u0, u1, f, w.steps.data());
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t i = u0 + r;
      const T* qi = q.row(c0 + i);
      T* dqi = dq + (c0 + i) * f;
      T* e = w.expo.data();  // e[c, f] = e^(B_if − B_jf) for keys j = u0 + c < i
      pair_decays(w.steps.data(), r, f, e);
      T* arow = a_diag + r * rows;
      for (int64_t c = 0; c < r; ++c) {
        const int64_t j = u0 + c;
        const T* kj = k.row(c0 + j);
        T* dkj = dk + (c0 + j) * f;
        const T* ec = e + c * f;
        const T dpij = dp[r * rows + c];
#pragma omp simd
        for (int64_t x = 0; x < f; ++x) {
          dqi[x] += dpij * kj[x] * ec[x];
          dkj[x] += dpij * qi[x] * ec[x];
        }
        arow[c] = weighted_dot_row(qi, kj, ec, f);
      }
      arow[r] = dot_row(qi, k.row(c0 + i), f);
      for (int64_t c = r + 1; c < rows; ++c) arow[c] = T(0);
    }
    // dV[I] += A[I, I]ᵀ dO_I
    block_product(rows, d, rows, a_diag, int64_t{1}, rows, g.row(c0 + u0), g.ld, dv.row(c0 + u0),
                  dv.ld, true);
    if (u0 == 0) continue;
    // Earlier keys j < u0 through p = u0 − 1.
    T* alpha = w.alpha.data();  // [rows, F]
    T* beta = w.beta.data();    // [u0, F]
    T* qh = w.qh.data();        // q_I ⊙ α: [rows, F]
    T* kh = w.kh.data();        // k_j ⊙ β: [u0, F]
    gated_rows<T>(
        cum, f, f, rows, [&](int64_t r) { return u0 + r + 1; }, [&](int64_t) { return u0; }, alpha,
        q, c0 + u0, qh, false);
    gated_rows<T>(
        cum, f, f, u0, [&](int64_t) { return u0; }, [](int64_t j) { return j + 1; }, beta, k, c0,
        kh, false);
    T* a_off = w.scores.data();                                 // [rows, u0]
    small_gemm::transpose_into(kh, u0, f, f, w.packed.data());  // khᵀ [F, u0]
    block_product(rows, u0, f, qh, f, int64_t{1}, w.packed.data(), u0, a_off, u0, false);
    // dP[I, <u0] = dO_I · V[<u0]ᵀ
    block_product(rows, u0, d, g.row(c0 + u0), g.ld, int64_t{1}, w.packed2.data(), len, dp, u0,
                  false);
    T* temp = w.temp.data();
    // dq_I += α ⊙ (dP · kh)
    block_product(rows, f, u0, dp, u0, int64_t{1}, kh, f, temp, f, false);
    for (int64_t r = 0; r < rows; ++r) {
      T* dqi = dq + (c0 + u0 + r) * f;
#pragma omp simd
      for (int64_t x = 0; x < f; ++x) dqi[x] += alpha[r * f + x] * temp[r * f + x];
    }
    // dk_j += β_j ⊙ (dPᵀ · qh)
    block_product(u0, f, rows, dp, int64_t{1}, u0, qh, f, temp, f, false);
    for (int64_t j = 0; j < u0; ++j) {
      T* dkj = dk + (c0 + j) * f;
#pragma omp simd
      for (int64_t x = 0; x < f; ++x) dkj[x] += beta[j * f + x] * temp[j * f + x];
    }
    // dV[<u0] += A[I, <u0]ᵀ dO_I
    block_product(u0, d, rows, a_off, int64_t{1}, u0, g.row(c0 + u0), g.ld, dv.row(c0), dv.ld,
                  true);
  }
}

// Scalar gates, intra-chunk backward: with the masked decay matrix W (W_ij = e^(B_i − B_j), j ≤ i),
// row block I of queries against keys 0..u1−1: dP = (dO_I V_cᵀ) ⊙ W without the diagonal,
// dq_I += dP K_c, dk_c += dPᵀ Q_I, dv_c += ((Q_I K_cᵀ) ⊙ W)ᵀ dO_I. Operands as the per-channel
// form.
template <typename T>
void intra_backward_scalar(Rows<const T> q, Rows<const T> k, Rows<const T> v, Rows<const T> g,
                           T* dq, T* dk, Rows<T> dv, int64_t c0, int64_t len, Scratch<T>& w,
                           const GlaDims& s) {
  const double* cum = w.cum.data();
  const int64_t f = s.f, d = s.d;
  small_gemm::transpose_into(k.row(c0), len, f, k.ld, w.packed.data());   // K_cᵀ [F, len]
  small_gemm::transpose_into(v.row(c0), len, d, v.ld, w.packed2.data());  // V_cᵀ [D, len]
  for (int64_t u0 = 0; u0 < len; u0 += kRowBlock) {
    const int64_t u1 = std::min(len, u0 + kRowBlock);
    const int64_t rows = u1 - u0;
    const int64_t cols = u1;
    T* decay = w.decay.data();  // [rows, cols]
    T* a = w.scores.data();
    T* dp = w.dscores.data();
    scalar_decay_block(cum, u0, rows, cols, decay);
    block_product(rows, cols, f, q.row(c0 + u0), q.ld, int64_t{1}, w.packed.data(), len, a, cols,
                  false);
    block_product(rows, cols, d, g.row(c0 + u0), g.ld, int64_t{1}, w.packed2.data(), len, dp, cols,
                  false);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t j = 0; j < cols; ++j) {
        a[r * cols + j] *= decay[r * cols + j];
        dp[r * cols + j] *= decay[r * cols + j];
      }
      dp[r * cols + u0 + r] = T(0);  // the pair j = i is added after the gate gradient
    }
    block_product(rows, f, cols, dp, cols, int64_t{1}, k.row(c0), k.ld, dq + (c0 + u0) * f, f,
                  true);
    block_product(cols, f, rows, dp, int64_t{1}, cols, q.row(c0 + u0), q.ld, dk + c0 * f, f, true);
    block_product(cols, d, rows, a, int64_t{1}, cols, g.row(c0 + u0), g.ld, dv.row(c0), dv.ld,
                  true);
  }
}

// One group of the backward. Inputs as the forward plus g = dO: [N, D]; dq, dk: [N, F] dense,
// dv: [N, D] rows (stored like v), dgate: [N, gw] dense. State carry: initial S₀ [F, D] or null;
// grad_final dL/dS_N [F, D] or null (S_N is the state at row N − 1, so it is R of the last
// chunk); d_initial: where dL/dS₀ goes, or null.
template <typename T>
void backward_group(Rows<const T> q, Rows<const T> k, Rows<const T> v, Rows<const T> gate,
                    Rows<const T> g, T* dq, T* dk, Rows<T> dv, T* dgate, Scratch<T>& w,
                    const GlaDims& s, int64_t chunk, const T* initial, const T* grad_final,
                    T* d_initial) {
  const int64_t f = s.f, d = s.d;
  T* state = w.state.data();
  // Forward sweep: dq_i = e^(B_i) ⊙ (dO_i Sᵀ) with S the key state before the chunk (S₀ before
  // the first). With dL/dS_N it runs on to S_N, for the last gate's gradient.
  if (initial) {
    std::copy(initial, initial + f * d, state);
  } else {
    std::fill(state, state + f * d, T(0));
  }
  for (int64_t c0 = 0; c0 < s.n; c0 += chunk) {
    const int64_t c1 = std::min(s.n, c0 + chunk);
    const int64_t len = c1 - c0;
    local_cumsum(gate, c0, len, s.gw, w.cum.data());
    T* dqc = dq + c0 * f;
    if (c0 == 0 && !initial) {
      std::fill(dqc, dqc + len * f, T(0));
    } else {
      small_gemm::transpose_into(state, f, d, d, w.state_t.data());  // Sᵀ [D, F]
      block_product(len, f, d, g.row(c0), g.ld, int64_t{1}, w.state_t.data(), f, dqc, f, false);
      gated_rows<T>(
          w.cum.data(), s.gw, f, len, [](int64_t u) { return u + 1; }, [](int64_t) { return 0; },
          w.alpha.data(), Rows<const T>{nullptr, 0}, 0, nullptr, false);
      for (int64_t x = 0; x < len * f; ++x) dqc[x] *= w.alpha[x];
    }
    if (c1 < s.n || grad_final) advance_state(state, k, v, c0, len, w, s);
  }
  // S_N depends on the gates up to row N − 1 through e^(B_{N−1}) on every term:
  // ∂⟨dL/dS_N, S_N⟩/∂B_{N−1} = Σ_d (dL/dS_N ⊙ S_N)[f, d], a query at N − 1 would give.
  std::vector<double> acc(s.gw, 0.0);
  if (grad_final && s.n > 0) {
    for (int64_t x = 0; x < f; ++x) {
      double sum = 0;
      for (int64_t y = 0; y < d; ++y) {
        sum += static_cast<double>(grad_final[x * d + y]) * state[x * d + y];
      }
      acc[s.gw == 1 ? 0 : x] += sum;
    }
  }
  // Reverse sweep with R = ∂L/∂S at the chunk's last row: Σ_{i≥c1} diag(e^(b_i − b_{c1−1})) q_iᵀ
  // dO_i.
  std::fill(dk, dk + s.n * f, T(0));
  for (int64_t t = 0; t < s.n; ++t) std::fill(dv.row(t), dv.row(t) + d, T(0));
  T* r = w.state.data();
  if (grad_final) {
    std::copy(grad_final, grad_final + f * d, r);
  } else {
    std::fill(r, r + f * d, T(0));
  }
  const int64_t last = s.n > 0 ? ((s.n - 1) / chunk) * chunk : 0;
  for (int64_t c0 = last; c0 >= 0; c0 -= chunk) {
    const int64_t c1 = std::min(s.n, c0 + chunk);
    const int64_t len = c1 - c0;
    local_cumsum(gate, c0, len, s.gw, w.cum.data());
    const double* cum = w.cum.data();
    if (s.gw == 1) {
      intra_backward_scalar(q, k, v, g, dq, dk, dv, c0, len, w, s);
    } else {
      intra_backward_vector(q, k, v, g, dq, dk, dv, c0, len, w, s);
    }
    if (c1 < s.n || grad_final) {
      // dk_u += e^(B_last − B_u) ⊙ (v_u Rᵀ), dv_u += (k_u ⊙ e^(B_last − B_u)) R.
      small_gemm::transpose_into(r, f, d, d, w.state_t.data());  // Rᵀ [D, F]
      T* temp = w.temp.data();
      block_product(len, f, d, v.row(c0), v.ld, int64_t{1}, w.state_t.data(), f, temp, f, false);
      gated_rows<T>(
          cum, s.gw, f, len, [&](int64_t) { return len; }, [](int64_t u) { return u + 1; },
          w.beta.data(), k, c0, w.kh.data(), false);
      for (int64_t x = 0; x < len * f; ++x) dk[c0 * f + x] += w.beta[x] * temp[x];
      block_product(len, d, f, w.kh.data(), f, int64_t{1}, r, d, dv.row(c0), dv.ld, true);
    }
    if (c0 > 0 || d_initial) {
      // R ← diag(e^(B_last)) R + (Q_c ⊙ e^(B))ᵀ dO_c (before the first chunk: dL/dS₀)
      decay_state(r, cum, len, s.gw, f, d, w.temp.data());
      gated_rows<T>(
          cum, s.gw, f, len, [](int64_t u) { return u + 1; }, [](int64_t) { return 0; },
          w.alpha.data(), q, c0, w.qh.data(), false);
      block_product(f, d, len, w.qh.data(), int64_t{1}, f, g.row(c0), g.ld, r, d, true);
    }
  }
  // Gate gradient: db_t = q_t ⊙ dq_t − k_t ⊙ dk_t, dg_t = Σ_{i≥t} db_i, summed in f64. The pair
  // j = i contributes (dO_t·v_t) q_t ⊙ k_t to both terms and cancels; it is not in dq, dk yet, so
  // its rounding does not land in db (under strong gates db is far smaller than that pair). Then
  // the pair is added: dq_t += (dO_t·v_t) k_t, dk_t += (dO_t·v_t) q_t.
  if (d_initial) std::copy(r, r + f * d, d_initial);
  for (int64_t t = s.n - 1; t >= 0; --t) {
    const T* qt = q.row(t);
    const T* kt = k.row(t);
    T* dqt = dq + t * f;
    T* dkt = dk + t * f;
    if (s.gw == 1) {
      double sum = 0;
      for (int64_t x = 0; x < f; ++x) {
        sum += static_cast<double>(qt[x]) * dqt[x] - static_cast<double>(kt[x]) * dkt[x];
      }
      acc[0] += sum;
    } else {
      for (int64_t x = 0; x < f; ++x) {
        acc[x] += static_cast<double>(qt[x]) * dqt[x] - static_cast<double>(kt[x]) * dkt[x];
      }
    }
    for (int64_t x = 0; x < s.gw; ++x) dgate[t * s.gw + x] = static_cast<T>(acc[x]);
    const T dp = dot_row(g.row(t), v.row(t), d);
    axpy_row(dqt, dp, kt, f);
    axpy_row(dkt, dp, qt, f);
  }
}

// ---- Instruction-set builds ----
//
// The f32 group kernels are compiled for AVX-512, AVX2+FMA and plain x86-64 (isa_build.h) and
// picked once at run time (vecmath::best_isa(), capped by ROTA_MAX_CPU_ISA): `flatten` inlines
// the loops above (the pairwise gate factors, the gated rows, the gate gradient) into each build
// so they run at its vector width; the block products and the vector exp dispatch on their own.
// The builds may differ in the last bits (FMA contraction); each is deterministic. f64 (the
// references and gradient checks) runs the portable code.
// The entry points below pick the build with vecmath::f32_build_or_portable.
}  // namespace

Tensor gated_linear_attention_forward(const Tensor& q_in, const Tensor& k_in, const Tensor& v_in,
                                      const Tensor& gate_in, int64_t chunk_size,
                                      const Tensor& initial_in, Tensor* final_state,
                                      const Tensor& segment_ids) {
  const char* op = "gated_linear_attention";
  const GlaDims s = check_dims(op, q_in, k_in, v_in, gate_in);
  const DocumentRanges docs(op, segment_ids, s.groups, s.n);
  ROTA_CHECK(chunk_size >= 1, "{}: chunk size must be >= 1, got {}", op, chunk_size);
  const Tensor initial = dense_attention_state(op, "initial state", initial_in, q_in, v_in);
  const Operands in = operands(q_in, k_in, v_in, gate_in, attention_output(v_in));
  if (final_state) *final_state = Tensor::empty(attention_state_shape(q_in, v_in), q_in.dtype());
  dispatch_floating(in.q.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    check_gate_values<T>(op, in, s);
    if (s.f == 0) {       // no features: every score is 0 (and the state is empty)
      Tensor out = in.x;  // shares the storage
      out.fill(0.0);
      return;
    }
    const auto group_kernel =
        vecmath::f32_build_or_portable<T, &forward_group<float>, &forward_group<double>>();
    parallel_for(s.groups, s.n * (s.f + 1) * (s.d + kSubBlock), [&](int64_t g0, int64_t g1) {
      Scratch<T> scratch(s, chunk_size);
      for (int64_t g = g0; g < g1; ++g) {
        for_each_document(docs, g, s, [&](int64_t at, const GlaDims& part, bool first, bool last) {
          group_kernel(
              from_row(slice_rows<const T>(in.q, in.q_at, g), at),
              from_row(slice_rows<const T>(in.k, in.k_at, g), at),
              from_row(slice_rows<const T>(in.v, in.v_at, g), at),
              from_row(slice_rows<const T>(in.gate, in.gate_at, g), at),
              from_row(slice_rows<T>(in.x, in.x_at, g), at), scratch, part, chunk_size,
              first ? attention_state_slice<const T>(initial, s.f, s.d, g) : nullptr,
              final_state && last ? attention_state_slice<T>(*final_state, s.f, s.d, g) : nullptr);
        });
      }
    });
  });
  return in.x;
}

GatedLinearAttentionGrads gated_linear_attention_backward(const Tensor& q_in, const Tensor& k_in,
                                                          const Tensor& v_in, const Tensor& gate_in,
                                                          const Tensor& g_in, int64_t chunk_size,
                                                          const Tensor& initial_in,
                                                          const Tensor& grad_final_in,
                                                          const Tensor& segment_ids) {
  const char* op = "gated_linear_attention_backward";
  const GlaDims s = check_dims(op, q_in, k_in, v_in, gate_in);
  const DocumentRanges docs(op, segment_ids, s.groups, s.n);
  ROTA_CHECK(g_in.shape() == v_in.shape() && g_in.dtype() == v_in.dtype(),
             "{}: grad {} ({}) for output {} ({})", op, shape_str(g_in.shape()),
             dtype_name(g_in.dtype()), shape_str(v_in.shape()), dtype_name(v_in.dtype()));
  ROTA_CHECK(chunk_size >= 1, "{}: chunk size must be >= 1, got {}", op, chunk_size);
  const Tensor initial = dense_attention_state(op, "initial state", initial_in, q_in, v_in);
  const Tensor grad_final =
      dense_attention_state(op, "final state's gradient", grad_final_in, q_in, v_in);
  const Operands in = operands(q_in, k_in, v_in, gate_in, g_in);
  GatedLinearAttentionGrads grads{
      Tensor::empty(q_in.shape(), q_in.dtype()), Tensor::empty(k_in.shape(), k_in.dtype()),
      empty_in_layout_of(in.v), Tensor::empty(gate_in.shape(), gate_in.dtype()), Tensor()};
  if (initial.defined()) grads.d_initial_state = Tensor::empty(initial.shape(), q_in.dtype());
  const std::vector<int64_t> dv_at = matrix_offsets(grads.dv.shape(), grads.dv.strides());
  dispatch_floating(in.q.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    check_gate_values<T>(op, in, s);
    if (s.f == 0) {  // the output is 0 whatever v and the gates are
      grads.dv.fill(0.0);
      grads.dlog_gate.fill(0.0);
      return;
    }
    const auto group_kernel =
        vecmath::f32_build_or_portable<T, &backward_group<float>, &backward_group<double>>();
    parallel_for(s.groups, 3 * s.n * (s.f + 1) * (s.d + kSubBlock), [&](int64_t g0, int64_t g1) {
      Scratch<T> scratch(s, chunk_size);
      for (int64_t gi = g0; gi < g1; ++gi) {
        for_each_document(docs, gi, s, [&](int64_t at, const GlaDims& part, bool first, bool last) {
          const int64_t qo = gi * s.n * s.f + at * s.f;
          group_kernel(
              from_row(slice_rows<const T>(in.q, in.q_at, gi), at),
              from_row(slice_rows<const T>(in.k, in.k_at, gi), at),
              from_row(slice_rows<const T>(in.v, in.v_at, gi), at),
              from_row(slice_rows<const T>(in.gate, in.gate_at, gi), at),
              from_row(slice_rows<const T>(in.x, in.x_at, gi), at),
              grads.dq.template data<T>() + qo, grads.dk.template data<T>() + qo,
              from_row(slice_rows<T>(grads.dv, dv_at, gi), at),
              grads.dlog_gate.template data<T>() + (gi * s.n + at) * s.gw, scratch, part,
              chunk_size, first ? attention_state_slice<const T>(initial, s.f, s.d, gi) : nullptr,
              last ? attention_state_slice<const T>(grad_final, s.f, s.d, gi) : nullptr,
              first ? attention_state_slice<T>(grads.d_initial_state, s.f, s.d, gi) : nullptr);
        });
      }
    });
  });
  return grads;
}

Tensor gated_linear_attention_quadratic(const Tensor& q_in, const Tensor& k_in, const Tensor& v_in,
                                        const Tensor& gate_in) {
  const char* op = "gated_linear_attention_quadratic";
  const GlaDims s = check_dims(op, q_in, k_in, v_in, gate_in);
  const Tensor q = q_in.contiguous(), k = k_in.contiguous(), v = v_in.contiguous(),
               gate = gate_in.contiguous();
  Tensor o = zeros(v.shape(), v.dtype());
  dispatch_floating(q.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    const Operands in = operands(q, k, v, gate, o);
    check_gate_values<T>(op, in, s);
    parallel_for(s.groups, s.n * s.n * (s.f + s.d), [&](int64_t g0, int64_t g1) {
      std::vector<double> b((s.n + 1) * s.gw);  // b[t + 1] = Σ_{s≤t} g_s; b[0] = 0
      std::vector<T> scores(s.n * s.n);         // the N×N matrix this form is defined by
      for (int64_t gi = g0; gi < g1; ++gi) {
        const T* pq = q.data<T>() + gi * s.n * s.f;
        const T* pk = k.data<T>() + gi * s.n * s.f;
        const T* pv = v.data<T>() + gi * s.n * s.d;
        const T* pg = gate.data<T>() + gi * s.n * s.gw;
        T* po = o.data<T>() + gi * s.n * s.d;
        std::fill(b.begin(), b.begin() + s.gw, 0.0);
        for (int64_t t = 0; t < s.n; ++t) {
          for (int64_t x = 0; x < s.gw; ++x)
            b[(t + 1) * s.gw + x] = b[t * s.gw + x] + pg[t * s.gw + x];
        }
        for (int64_t i = 0; i < s.n; ++i) {
          for (int64_t j = 0; j < s.n; ++j) {
            T sc = 0;
            if (j <= i) {
              for (int64_t x = 0; x < s.f; ++x) {
                const int64_t c = s.gw == 1 ? 0 : x;
                sc += pq[i * s.f + x] * pk[j * s.f + x] *
                      static_cast<T>(std::exp(b[(i + 1) * s.gw + c] - b[(j + 1) * s.gw + c]));
              }
            }
            scores[i * s.n + j] = sc;
          }
        }
        for (int64_t i = 0; i < s.n; ++i) {
          for (int64_t j = 0; j <= i; ++j)
            axpy_row(po + i * s.d, scores[i * s.n + j], pv + j * s.d, s.d);
        }
      }
    });
  });
  return o;
}

Tensor gated_linear_attention_step(const Tensor& q_in, const Tensor& k_in, const Tensor& v_in,
                                   const Tensor& gate_in, Tensor& state) {
  const char* op = "gated_linear_attention_step";
  ROTA_CHECK(q_in.dim() == 2 && k_in.shape() == q_in.shape() && v_in.dim() == 2 &&
                 v_in.size(0) == q_in.size(0) && gate_in.dim() == 2 &&
                 gate_in.size(0) == q_in.size(0) &&
                 (gate_in.size(1) == q_in.size(1) || gate_in.size(1) == 1) && state.dim() == 3 &&
                 state.size(0) == q_in.size(0) && state.size(1) == q_in.size(1) &&
                 state.size(2) == v_in.size(1) && state.is_contiguous(),
             "{}: q {}, k {}, v {}, log_gate {}, state {}: expected [G,F], [G,F], [G,D], [G,F] or "
             "[G,1], contiguous [G,F,D]",
             op, shape_str(q_in.shape()), shape_str(k_in.shape()), shape_str(v_in.shape()),
             shape_str(gate_in.shape()), shape_str(state.shape()));
  ROTA_CHECK(q_in.dtype() == k_in.dtype() && q_in.dtype() == v_in.dtype() &&
                 q_in.dtype() == gate_in.dtype() && q_in.dtype() == state.dtype(),
             "{}: dtypes of q {}, k {}, v {}, log_gate {}, state {} differ", op,
             dtype_name(q_in.dtype()), dtype_name(k_in.dtype()), dtype_name(v_in.dtype()),
             dtype_name(gate_in.dtype()), dtype_name(state.dtype()));
  const int64_t groups = q_in.size(0);
  const int64_t f = q_in.size(1);
  const int64_t d = v_in.size(1);
  const int64_t gw = gate_in.size(1);
  const Tensor q = q_in.contiguous(), k = k_in.contiguous(), v = v_in.contiguous(),
               gate = gate_in.contiguous();
  Tensor o = zeros(v.shape(), v.dtype());
  dispatch_floating(q.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    const T* pg = gate.data<T>();
    for (int64_t x = 0; x < groups * gw; ++x) {
      ROTA_CHECK(std::isfinite(pg[x]) && pg[x] <= T(0),
                 "{}: log_gate {} must be finite and <= 0 (a decay in (0, 1]); found {} in group "
                 "{}, channel {}",
                 op, shape_str(gate.shape()), static_cast<double>(pg[x]), x / gw, x % gw);
    }
    parallel_for(groups, 2 * f * d, [&](int64_t g0, int64_t g1) {
      for (int64_t gi = g0; gi < g1; ++gi) {
        T* st = state.data<T>() + gi * f * d;
        const T* kg = k.data<T>() + gi * f;
        const T* vg = v.data<T>() + gi * d;
        for (int64_t x = 0; x < f; ++x) {  // S = diag(e^g) S + kᵀ v
          const T a = static_cast<T>(std::exp(pg[gi * gw + (gw == 1 ? 0 : x)]));
          T* row = st + x * d;
#pragma omp simd
          for (int64_t y = 0; y < d; ++y) row[y] = a * row[y] + kg[x] * vg[y];
        }
        T* og = o.data<T>() + gi * d;
        const T* qg = q.data<T>() + gi * f;
        for (int64_t x = 0; x < f; ++x) axpy_row(og, qg[x], st + x * d, d);
      }
    });
  });
  return o;
}

}  // namespace rota::backend
