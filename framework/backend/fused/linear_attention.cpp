// Linear attention kernels: per (batch, head) slice, OpenMP across slices, block products
// (small_gemm) inside a slice.
#include "framework/backend/fused/linear_attention.h"

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <utility>
#include <vector>

#include "framework/backend/cpu/dispatch.h"
#include "framework/backend/cpu/parallel.h"
#include "framework/backend/cpu/row_kernels.h"
#include "framework/backend/cpu/small_gemm.h"
#include "framework/backend/fused/attention_state.h"
#include "framework/backend/fused/document_ranges.h"
#include "framework/tensor/strided_loop.h"

namespace rota::backend {

namespace {

// Common shape check: q, k [..., N, F], v [..., N, D] with equal leading dims.
struct AttentionDims {
  int64_t groups;  // G: product of leading dims
  int64_t n;       // N: sequence length
  int64_t f;       // F: feature dim of q, k
  int64_t d;       // D: value dim
};

AttentionDims check_dims(const char* op, const Tensor& q, const Tensor& k, const Tensor& v) {
  ROTA_CHECK(q.dim() >= 2 && q.shape() == k.shape() && v.dim() == q.dim(),
             "{}: q {}, k {}, v {}: expected q, k [..., N, F] and v [..., N, D]", op,
             shape_str(q.shape()), shape_str(k.shape()), shape_str(v.shape()));
  for (int64_t i = 0; i + 1 < q.dim(); ++i) {
    ROTA_CHECK(q.size(i) == v.size(i), "{}: q {} and v {} differ in dim {}", op,
               shape_str(q.shape()), shape_str(v.shape()), i);
  }
  ROTA_CHECK(q.dtype() == k.dtype() && q.dtype() == v.dtype(), "{}: dtypes {}, {}, {} differ", op,
             dtype_name(q.dtype()), dtype_name(k.dtype()), dtype_name(v.dtype()));
  AttentionDims dims;
  dims.n = q.size(-2);
  dims.f = q.size(-1);
  dims.d = v.size(-1);
  dims.groups = (dims.n * dims.f) != 0 ? q.numel() / (dims.n * dims.f) : 0;
  return dims;
}

// o[D] += x[F] · M[F, D]
template <typename T>
inline void row_times_matrix(T* o, const T* x, const T* m, int64_t f, int64_t d) {
  for (int64_t r = 0; r < f; ++r) axpy_row(o, x[r], m + r * d, d);
}

// M[F, D] += a[F]ᵀ b[D]
template <typename T>
inline void outer_accumulate(T* m, const T* a, const T* b, int64_t f, int64_t d) {
  for (int64_t r = 0; r < f; ++r) axpy_row(m + r * d, a[r], b, d);
}

// ---- Block products (small_gemm: register-tiled, cache-resident) ----

// Rows of the intra-chunk products handled at once: the score block is [kRowBlock, ≤ C]. Row
// block r of a chunk only multiplies the keys it can see, so smaller blocks skip more of the
// masked triangle; 32 measured 5-10 % faster than 64 (fwd + bwd, C = 64), 16 no better.
constexpr int64_t kRowBlock = 32;

using small_gemm::block_product;

// Causal mask and decay of a score block: rows i = i0 + r, columns j = j0 + col (row-major,
// [rows, cols], ld = cols); keeps j ≤ i (lower = true) or j ≥ i (lower = false, the transposed
// block of the backward) and multiplies by γ^|i−j| when pw is set.
template <typename T>
void mask_scores(T* scores, int64_t rows, int64_t cols, int64_t i0, int64_t j0, bool lower,
                 const T* pw) {
  for (int64_t r = 0; r < rows; ++r) {
    T* row = scores + r * cols;
    const int64_t i = i0 + r;
    for (int64_t col = 0; col < cols; ++col) {
      const int64_t j = j0 + col;
      const bool keep = lower ? j <= i : j >= i;
      if (!keep) {
        row[col] = T(0);
      } else if (pw) {
        row[col] *= pw[lower ? i - j : j - i];
      }
    }
  }
}

// out[r, :] += scale(r) · add[r, :] for rows r < rows of width elements; out rows ld_out apart,
// add rows dense.
template <typename T, typename Scale>
void add_scaled_rows(T* out, int64_t ld_out, const T* add, int64_t rows, int64_t width,
                     Scale scale) {
  for (int64_t r = 0; r < rows; ++r) {
    const T w = scale(r);
#pragma omp simd
    for (int64_t x = 0; x < width; ++x) out[r * ld_out + x] += w * add[r * width + x];
  }
}

// Rows of one (batch, head) slice: the first row and the distance between rows (elements).
// Inputs may be views such as a permuted [B, N, H, D] tensor read as [B, H, N, D].
template <typename T>
struct Rows {
  T* at;
  int64_t ld;
  T* row(int64_t i) const { return at + i * ld; }
};

// Per-thread scratch of the chunked kernels, sized for chunk C, features F and values D.
template <typename T>
struct ChunkScratch {
  std::vector<T> state;        // S or R: [F, D]
  std::vector<T> state_t;      // its transpose: [D, F]
  std::vector<T> packed_a;     // a chunk of one input transposed: [max(F, D), C]
  std::vector<T> packed_b;     // a chunk of another input transposed: [max(F, D), C]
  std::vector<T> scores;       // [kRowBlock, C]
  std::vector<T> inter;        // inter-chunk term of a row block: [kRowBlock, max(F, D)]
  std::vector<T> scaled_rows;  // a decay-weighted chunk of one input: [C, F]

  ChunkScratch(const AttentionDims& s, int64_t chunk) {
    const int64_t c = std::min(chunk, std::max<int64_t>(s.n, 1));
    const int64_t w = std::max(s.f, s.d);
    state.resize(s.f * s.d);
    state_t.resize(s.f * s.d);
    packed_a.resize(w * c);
    packed_b.resize(w * c);
    scores.resize(kRowBlock * c);
    inter.resize(kRowBlock * w);
    scaled_rows.resize(c * s.f);
  }
};

// Moves a [F, D] state past chunk [c0, c1): state = γ^p state + Σ_{c0≤j<c1} γ^e(j) a_jᵀ b_j
// with e(j) = c1−1−j for the key state S (a, b = k, v: the forward and the backward's forward
// sweep) or e(j) = j−c0 for the backward's reverse state R (a, b = q, dO, walking towards the
// start); γ = 1 without decay. p = c1 − c0 − state_lag (state_lag 1: R held the final state's
// gradient, a query at c1 − 1, not at c1). a: [N, F]; b: [N, D]; pw: powers γ^0..γ^C or null.
template <typename T>
void advance_state(T* state, Rows<const T> a, Rows<const T> b, int64_t c0, int64_t c1, bool reverse,
                   const AttentionDims& s, const T* pw, T* scaled_rows, int64_t state_lag = 0) {
  const int64_t len = c1 - c0;
  const T* rows = a.row(c0);  // [len, F] (rows a.ld apart), read transposed as [F, len]
  int64_t rows_ld = a.ld;
  if (pw) {
    for (int64_t x = 0; x < s.f * s.d; ++x) state[x] *= pw[len - state_lag];
    for (int64_t j = 0; j < len; ++j) {
      const T w = pw[reverse ? j : len - 1 - j];
      for (int64_t x = 0; x < s.f; ++x) scaled_rows[j * s.f + x] = w * rows[j * rows_ld + x];
    }
    rows = scaled_rows;
    rows_ld = s.f;
  }
  // state[F, D] += rowsᵀ[F, len] · b_c[len, D]
  block_product(s.f, s.d, len, rows, 1, rows_ld, b.row(c0), b.ld, state, s.d, true);
}

// One causal sweep over the chunks of a slice, rebuilding the key state S = γ^c0 S₀ + Σ_{j<c0}
// γ^(c0−1−j) k_jᵀ v_j chunk by chunk (so every power stays ≤ 1: no overflow):
//   out_i = Σ_{c0≤j≤i} γ^(i−j) (a_i·b_j) c_j + γ^(i−c0+1) a_i M,
// M = S [F, D] (the forward: a, b, c = q, k, v) or, with transposed_state, Sᵀ [D, F] (the
// backward's dq: a, b, c = dO, v, k). a, b: [N, W]; c, out: [N, W'] with W = F, W' = D (or
// W = D, W' = F when transposed). pw: [C+1] powers γ^0..γ^C or null. initial: S₀ [F, D] or
// null (zeros). Leaves S_N in w.state.
template <typename T>
void causal_sweep(Rows<const T> a, Rows<const T> b, Rows<const T> c, Rows<T> out,
                  bool transposed_state, Rows<const T> k, Rows<const T> v, ChunkScratch<T>& w,
                  const AttentionDims& s, int64_t chunk, const T* pw, const T* initial) {
  const int64_t wa = transposed_state ? s.d : s.f;                    // W
  const int64_t wc = transposed_state ? s.f : s.d;                    // W'
  const T* m = transposed_state ? w.state_t.data() : w.state.data();  // [W, W']
  T* state = w.state.data();
  T* scores = w.scores.data();
  if (initial) {
    std::copy(initial, initial + s.f * s.d, state);
  } else {
    std::fill(state, state + s.f * s.d, T(0));
  }
  for (int64_t c0 = 0; c0 < s.n; c0 += chunk) {
    const int64_t c1 = std::min(s.n, c0 + chunk);
    const int64_t len = c1 - c0;
    const bool earlier_keys = c0 > 0 || initial != nullptr;                   // S is non-zero
    small_gemm::transpose_into(b.row(c0), len, wa, b.ld, w.packed_a.data());  // B_cᵀ [W, len]
    if (transposed_state && earlier_keys) {
      small_gemm::transpose_into(state, s.f, s.d, s.d, w.state_t.data());  // Sᵀ [D, F]
    }
    for (int64_t i0 = c0; i0 < c1; i0 += kRowBlock) {
      const int64_t i1 = std::min(c1, i0 + kRowBlock);
      const int64_t rows = i1 - i0;
      const int64_t cols = i1 - c0;  // keys c0..i1−1 can be seen by these rows
      // Scores[rows, cols] = A[i0:i1] · B[c0:i1]ᵀ, masked to j ≤ i, weighted γ^(i−j).
      block_product(rows, cols, wa, a.row(i0), a.ld, 1, w.packed_a.data(), len, scores, cols,
                    false);
      mask_scores(scores, rows, cols, i0, c0, true, pw);
      // Out[i0:i1] = Scores · C[c0:i1]
      block_product(rows, wc, cols, scores, cols, 1, c.row(c0), c.ld, out.row(i0), out.ld, false);
      if (!earlier_keys) continue;
      // Inter-chunk: out_i += γ^(i−c0+1) a_i M.
      if (pw) {
        block_product(rows, wc, wa, a.row(i0), a.ld, 1, m, wc, w.inter.data(), wc, false);
        add_scaled_rows(out.row(i0), out.ld, w.inter.data(), rows, wc,
                        [&](int64_t r) { return pw[i0 + r - c0 + 1]; });
      } else {
        block_product(rows, wc, wa, a.row(i0), a.ld, 1, m, wc, out.row(i0), out.ld, true);
      }
    }
    advance_state(state, k, v, c0, c1, false, s, pw, w.scaled_rows.data());
  }
}

// One slice of the causal forward. q, k: [N, F], v, o: [N, D] (rows at their own strides).
// With a decay γ the weights become γ^(i−j): o_i = Σ_{j≤i} γ^(i−j) (q_i·k_j) v_j.
// pw: [C+1] powers γ^0..γ^C.
// initial: S₀ [F, D] or null; final_state: where S_N [F, D] goes, or null.
template <typename T>
void causal_forward_slice(Rows<const T> q, Rows<const T> k, Rows<const T> v, Rows<T> o,
                          ChunkScratch<T>& w, const AttentionDims& s, int64_t chunk, const T* pw,
                          const T* initial, T* final_state) {
  causal_sweep(q, k, v, o, false, k, v, w, s, chunk, pw, initial);
  if (final_state) std::copy(w.state.begin(), w.state.begin() + s.f * s.d, final_state);
}

// One slice of the causal backward. Inputs as the forward plus g = dO: [N, D]; dq, dk: [N, F]
// dense and dv: [N, D] rows (stored like v, see linear_attention_grads).
// Decayed: dq_i = γ^(i−c0+1) g_i Sᵀ + Σ_{c0≤j≤i} γ^(i−j) (g_i·v_j) k_j; the reverse state
// R = Σ_{i≥c1} γ^(i−c1) q_iᵀ g_i gives dk_j = γ^(c1−j) R v_j + Σ_{j≤i<c1} γ^(i−j)(g_i·v_j) q_i
// and dv_j = γ^(c1−j) k_j R + Σ_{j≤i<c1} γ^(i−j)(q_i·k_j) g_i.
// State carry: initial S₀ [F, D] or null; grad_final dL/dS_N [F, D] or null, which weighs key j
// by γ^(N−1−j) (a query at N − 1: R = dL/dS_N in the last chunk with weights γ^(c1−1−j));
// d_initial: where dL/dS₀ = γ R(0) goes, or null.
template <typename T>
void causal_backward_slice(Rows<const T> q, Rows<const T> k, Rows<const T> v, Rows<const T> g,
                           T* dq, T* dk, Rows<T> dv, ChunkScratch<T>& w, const AttentionDims& s,
                           int64_t chunk, const T* pw, const T* initial, const T* grad_final,
                           T* d_initial) {
  // Forward sweep for dq: dq_i = γ^(i−c0+1) g_i Sᵀ + Σ_{c0≤j≤i} γ^(i−j) (g_i·v_j) k_j.
  causal_sweep(g, v, k, Rows<T>{dq, s.f}, true, k, v, w, s, chunk, pw, initial);
  T* scores = w.scores.data();
  // Reverse sweep with R = Σ_{t in later chunks} γ^(t−c1) q_tᵀ g_t: [F, D].
  T* r = w.state.data();
  if (grad_final) {
    std::copy(grad_final, grad_final + s.f * s.d, r);
  } else {
    std::fill(r, r + s.f * s.d, T(0));
  }
  const int64_t last = ((s.n - 1) / chunk) * chunk;
  for (int64_t c0 = last; c0 >= 0; c0 -= chunk) {
    const int64_t c1 = std::min(s.n, c0 + chunk);
    const int64_t len = c1 - c0;
    // In the last chunk R is dL/dS_N, a query at c1 − 1: its weights lag one power.
    const int64_t lag = c1 == s.n && grad_final ? 1 : 0;
    const bool later = c1 < s.n || grad_final != nullptr;                       // R is non-zero
    small_gemm::transpose_into(g.row(c0), len, s.d, g.ld, w.packed_a.data());   // G_cᵀ [D, len]
    small_gemm::transpose_into(q.row(c0), len, s.f, q.ld, w.packed_b.data());   // Q_cᵀ [F, len]
    if (later) small_gemm::transpose_into(r, s.f, s.d, s.d, w.state_t.data());  // Rᵀ [D, F]
    for (int64_t j0 = c0; j0 < c1; j0 += kRowBlock) {
      const int64_t j1 = std::min(c1, j0 + kRowBlock);
      const int64_t rows = j1 - j0;
      const int64_t cols = c1 - j0;  // queries j0..c1−1 can see these keys
      // dScoresᵀ[rows, cols] = V[j0:j1] · dO[j0:c1]ᵀ, kept for i ≥ j, weighted γ^(i−j).
      block_product(rows, cols, s.d, v.row(j0), v.ld, 1, w.packed_a.data() + (j0 - c0), len, scores,
                    cols, false);
      mask_scores(scores, rows, cols, j0, j0, false, pw);
      // dK[j0:j1] = dScoresᵀ · Q[j0:c1]
      block_product(rows, s.f, cols, scores, cols, 1, q.row(j0), q.ld, dk + j0 * s.f, s.f, false);
      // Scoresᵀ[rows, cols] = K[j0:j1] · Q[j0:c1]ᵀ, same mask.
      block_product(rows, cols, s.f, k.row(j0), k.ld, 1, w.packed_b.data() + (j0 - c0), len, scores,
                    cols, false);
      mask_scores(scores, rows, cols, j0, j0, false, pw);
      // dV[j0:j1] = Scoresᵀ · dO[j0:c1]
      block_product(rows, s.d, cols, scores, cols, 1, g.row(j0), g.ld, dv.row(j0), dv.ld, false);
      if (!later) continue;
      // dk_j += γ^(c1−j) v_j Rᵀ and dv_j += γ^(c1−j) k_j R (γ^(c1−1−j) with the lag).
      if (pw) {
        const auto weight = [&](int64_t x) { return pw[c1 - lag - (j0 + x)]; };
        block_product(rows, s.f, s.d, v.row(j0), v.ld, 1, w.state_t.data(), s.f, w.inter.data(),
                      s.f, false);
        add_scaled_rows(dk + j0 * s.f, s.f, w.inter.data(), rows, s.f, weight);
        block_product(rows, s.d, s.f, k.row(j0), k.ld, 1, r, s.d, w.inter.data(), s.d, false);
        add_scaled_rows(dv.row(j0), dv.ld, w.inter.data(), rows, s.d, weight);
      } else {
        block_product(rows, s.f, s.d, v.row(j0), v.ld, 1, w.state_t.data(), s.f, dk + j0 * s.f, s.f,
                      true);
        block_product(rows, s.d, s.f, k.row(j0), k.ld, 1, r, s.d, dv.row(j0), dv.ld, true);
      }
    }
    // R = γ^(c1−c0−lag) R + Σ_{c0≤i<c1} γ^(i−c0) q_iᵀ g_i.
    advance_state(r, q, g, c0, c1, true, s, pw, w.scaled_rows.data(), lag);
  }
  // dL/dS₀ = Σ_i γ^(i+1) q_iᵀ g_i + γ^N dL/dS_N = γ R(0).
  if (d_initial) {
    const T gamma = pw ? pw[1] : T(1);
    for (int64_t x = 0; x < s.f * s.d; ++x) d_initial[x] = gamma * r[x];
  }
}

// Decay per slice: for leading dims [B, H, ...] slice g uses decay[g % H]. Returns the powers
// γ^0..γ^C of every head, [H, C+1], or an empty vector without decay.
template <typename T>
std::vector<T> decay_powers(const char* op, const Tensor& decay, const Tensor& q, int64_t chunk) {
  std::vector<T> out;
  if (!decay.defined()) return out;
  ROTA_CHECK(q.dim() == 4 && decay.dim() == 1 && decay.size(0) == q.size(1),
             "{}: decay {} does not fit q {} (expected [H] for q [B, H, N, F])", op,
             shape_str(decay.shape()), shape_str(q.shape()));
  const std::vector<double> gamma = decay.to_double_vector();
  for (double gm : gamma) {
    ROTA_CHECK(gm > 0.0 && gm <= 1.0, "{}: decay {} outside (0, 1]", op, gm);
    for (int64_t p = 0; p <= chunk; ++p) out.push_back(static_cast<T>(std::pow(gm, p)));
  }
  return out;
}

// Slice g's rows of x (rows unit-stride: with_unit_stride_rows).
template <typename T>
Rows<T> slice_rows(const Tensor& x, const std::vector<int64_t>& offsets, int64_t g) {
  // A single row's stride is arbitrary (a size-1 dim may have any stride, even 1); the products
  // never step past it, so give it the row width the block products expect as a leading dim.
  const int64_t rows = x.size(x.dim() - 2);
  const int64_t ld = rows == 1 ? x.size(x.dim() - 1) : x.strides()[x.dim() - 2];
  return {x.data<std::remove_const_t<T>>() + offsets[g], ld};
}

// The operands as the kernels read them — q, k, v and a fourth tensor of v's shape (dO for a
// backward, the freshly allocated output for a forward) — with every slice's first-row offset.
struct SliceOperands {
  Tensor q, k, v, x;
  std::vector<int64_t> q_at, k_at, v_at, x_at;
};

SliceOperands slice_operands(const Tensor& q_in, const Tensor& k_in, const Tensor& v_in,
                             const Tensor& x_in) {
  SliceOperands in{with_unit_stride_rows(q_in),
                   with_unit_stride_rows(k_in),
                   with_unit_stride_rows(v_in),
                   with_unit_stride_rows(x_in),
                   {},
                   {},
                   {},
                   {}};
  in.q_at = matrix_offsets(in.q.shape(), in.q.strides());
  in.k_at = matrix_offsets(in.k.shape(), in.k.strides());
  in.v_at = matrix_offsets(in.v.shape(), in.v.strides());
  in.x_at = matrix_offsets(in.x.shape(), in.x.strides());
  return in;
}

// q, k, v made contiguous, and a zero output o shaped like v (the simple kernels' operands).
struct DenseOperands {
  Tensor q, k, v, o;
};

DenseOperands dense_operands(const Tensor& q, const Tensor& k, const Tensor& v) {
  return {q.contiguous(), k.contiguous(), v.contiguous(), zeros(v.shape(), v.dtype())};
}

// The output of a [B, H, N, D] attention: stored as [B, N, H, D] and returned as its permuted
// view, so merging the heads back into [B, N, E] is free; other ranks are dense.
Tensor attention_output(const Tensor& v) {
  if (v.dim() != 4) return Tensor::empty(v.shape(), v.dtype());
  return Tensor::empty({v.size(0), v.size(2), v.size(1), v.size(3)}, v.dtype())
      .permute({0, 2, 1, 3});
}

// Gradients for q, k, v: dq and dk dense [..., N, F]; dv dense in v's memory order (for the
// usual v, a head view of a [B, N, 3E] projection, that is [B, N, H, D], which the backward of
// the view then merges into [B, N, E] without a copy).
LinearAttentionGrads linear_attention_grads(const Tensor& q, const Tensor& k, const Tensor& v) {
  return {Tensor::empty(q.shape(), q.dtype()), Tensor::empty(k.shape(), k.dtype()),
          empty_in_layout_of(v), Tensor()};
}

}  // namespace

Tensor causal_linear_attention_forward(const Tensor& q_in, const Tensor& k_in, const Tensor& v_in,
                                       int64_t chunk_size, const Tensor& decay,
                                       const Tensor& initial_in, Tensor* final_state,
                                       const Tensor& segment_ids) {
  const char* op = "causal_linear_attention";
  const AttentionDims s = check_dims(op, q_in, k_in, v_in);
  ROTA_CHECK(chunk_size >= 1, "{}: chunk size must be >= 1, got {}", op, chunk_size);
  const DocumentRanges docs(op, segment_ids, s.groups, s.n);
  const Tensor initial = dense_attention_state(op, "initial state", initial_in, q_in, v_in);
  const auto [q, k, v, o, q_at, k_at, v_at, o_at] =
      slice_operands(q_in, k_in, v_in, attention_output(v_in));
  if (final_state) {
    // N = 0 (no slices run): S_N = S₀.
    *final_state = s.n == 0 ? (initial.defined() ? initial.clone()
                                                 : zeros(attention_state_shape(q, v), q.dtype()))
                            : Tensor::empty(attention_state_shape(q, v), q.dtype());
  }
  dispatch_floating(q.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    const std::vector<T> powers = decay_powers<T>(op, decay, q, chunk_size);
    const int64_t heads = powers.empty() ? 1 : q.size(1);
    parallel_for(s.groups, s.n * (s.f + 1) * (s.d + 1), [&](int64_t g0, int64_t g1) {
      ChunkScratch<T> scratch(s, chunk_size);
      for (int64_t g = g0; g < g1; ++g) {
        const T* pw = powers.empty() ? nullptr : powers.data() + (g % heads) * (chunk_size + 1);
        // S₀ continues the first document; S_N is the last document's state.
        for_each_document(
            docs, g, s, [&](int64_t at, const AttentionDims& part, bool first, bool last) {
              causal_forward_slice(
                  from_row(slice_rows<const T>(q, q_at, g), at),
                  from_row(slice_rows<const T>(k, k_at, g), at),
                  from_row(slice_rows<const T>(v, v_at, g), at),
                  from_row(slice_rows<T>(o, o_at, g), at), scratch, part, chunk_size, pw,
                  first ? attention_state_slice<const T>(initial, s.f, s.d, g) : nullptr,
                  final_state && last ? attention_state_slice<T>(*final_state, s.f, s.d, g)
                                      : nullptr);
            });
      }
    });
  });
  return o;
}

LinearAttentionGrads causal_linear_attention_backward(const Tensor& q_in, const Tensor& k_in,
                                                      const Tensor& v_in, const Tensor& g_in,
                                                      int64_t chunk_size, const Tensor& decay,
                                                      const Tensor& initial_in,
                                                      const Tensor& grad_final_in,
                                                      const Tensor& segment_ids) {
  const char* op = "causal_linear_attention_backward";
  const AttentionDims s = check_dims(op, q_in, k_in, v_in);
  const DocumentRanges docs(op, segment_ids, s.groups, s.n);
  ROTA_CHECK(g_in.shape() == v_in.shape(), "{}: grad {} for output {}", op, shape_str(g_in.shape()),
             shape_str(v_in.shape()));
  ROTA_CHECK(chunk_size >= 1, "{}: chunk size must be >= 1, got {}", op, chunk_size);
  const Tensor initial = dense_attention_state(op, "initial state", initial_in, q_in, v_in);
  const Tensor grad_final =
      dense_attention_state(op, "final state's gradient", grad_final_in, q_in, v_in);
  const auto [q, k, v, g, q_at, k_at, v_at, g_at] = slice_operands(q_in, k_in, v_in, g_in);
  LinearAttentionGrads grads = linear_attention_grads(q, k, v);
  if (initial.defined()) {
    // N = 0 (no slices run): dL/dS₀ = dL/dS_N.
    grads.d_initial_state =
        s.n == 0 ? (grad_final.defined() ? grad_final.clone() : zeros(initial.shape(), q.dtype()))
                 : Tensor::empty(initial.shape(), q.dtype());
  }
  const std::vector<int64_t> dv_at = matrix_offsets(grads.dv.shape(), grads.dv.strides());
  dispatch_floating(q.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    const std::vector<T> powers = decay_powers<T>(op, decay, q, chunk_size);
    const int64_t heads = powers.empty() ? 1 : q.size(1);
    parallel_for(s.groups, 2 * s.n * (s.f + 1) * (s.d + 1), [&](int64_t g0, int64_t g1) {
      ChunkScratch<T> scratch(s, chunk_size);
      for (int64_t gi = g0; gi < g1; ++gi) {
        const T* pw = powers.empty() ? nullptr : powers.data() + (gi % heads) * (chunk_size + 1);
        // S₀ and dL/dS₀ belong to the first document, dL/dS_N to the last.
        for_each_document(
            docs, gi, s, [&](int64_t at, const AttentionDims& part, bool first, bool last) {
              const int64_t qo = gi * s.n * s.f + at * s.f;
              causal_backward_slice(
                  from_row(slice_rows<const T>(q, q_at, gi), at),
                  from_row(slice_rows<const T>(k, k_at, gi), at),
                  from_row(slice_rows<const T>(v, v_at, gi), at),
                  from_row(slice_rows<const T>(g, g_at, gi), at), grads.dq.template data<T>() + qo,
                  grads.dk.template data<T>() + qo,
                  from_row(slice_rows<T>(grads.dv, dv_at, gi), at), scratch, part, chunk_size, pw,
                  first ? attention_state_slice<const T>(initial, s.f, s.d, gi) : nullptr,
                  last ? attention_state_slice<const T>(grad_final, s.f, s.d, gi) : nullptr,
                  first ? attention_state_slice<T>(grads.d_initial_state, s.f, s.d, gi) : nullptr);
            });
      }
    });
  });
  return grads;
}

Tensor causal_linear_attention_quadratic(const Tensor& q_in, const Tensor& k_in,
                                         const Tensor& v_in) {
  const char* op = "causal_linear_attention_quadratic";
  const AttentionDims s = check_dims(op, q_in, k_in, v_in);
  const auto [q, k, v, o] = dense_operands(q_in, k_in, v_in);
  dispatch_floating(q.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    parallel_for(s.groups, s.n * s.n * (s.f + s.d), [&](int64_t g0, int64_t g1) {
      std::vector<T> scores(s.n * s.n);  // the N×N matrix this form is defined by
      for (int64_t gi = g0; gi < g1; ++gi) {
        const T* pq = q.data<T>() + gi * s.n * s.f;
        const T* pk = k.data<T>() + gi * s.n * s.f;
        const T* pv = v.data<T>() + gi * s.n * s.d;
        T* po = o.data<T>() + gi * s.n * s.d;
        for (int64_t i = 0; i < s.n; ++i) {
          for (int64_t j = 0; j < s.n; ++j) {
            scores[i * s.n + j] = j <= i ? dot_row(pq + i * s.f, pk + j * s.f, s.f) : T(0);
          }
        }
        for (int64_t i = 0; i < s.n; ++i) {
          for (int64_t j = 0; j < s.n; ++j)
            axpy_row(po + i * s.d, scores[i * s.n + j], pv + j * s.d, s.d);
        }
      }
    });
  });
  return o;
}

namespace {

// The key mask of the bidirectional kernels: for q [B, H, N, F] and mask [B, N], slice g uses
// mask row g / H; an undefined mask hides nothing.
template <typename T>
struct KeyMask {
  std::vector<T> values;  // [B, N] as 0 / 1; empty without a mask
  int64_t heads = 1;

  // Slice g's row [N], or null without a mask.
  const T* row(int64_t g, int64_t n) const {
    return values.empty() ? nullptr : values.data() + (g / heads) * n;
  }
};

template <typename T>
KeyMask<T> key_mask_of(const Tensor& key_mask, const Tensor& q, const char* op) {
  KeyMask<T> mask;
  if (!key_mask.defined()) return mask;
  ROTA_CHECK(q.dim() == 4 && key_mask.dim() == 2 && key_mask.size(0) == q.size(0) &&
                 key_mask.size(1) == q.size(2),
             "{}: key mask {} does not fit q {} (expected [B, N] for q [B, H, N, F])", op,
             shape_str(key_mask.shape()), shape_str(q.shape()));
  for (double x : key_mask.to_double_vector()) mask.values.push_back(x != 0 ? T(1) : T(0));
  mask.heads = q.size(1);
  return mask;
}

// rows [N, W] (rows.ld apart) with the rows of masked-out keys (m_t = 0) zeroed, written densely
// to out; returns out's rows.
template <typename T>
Rows<const T> masked_rows(Rows<const T> rows, const T* m, int64_t n, int64_t width, T* out) {
  for (int64_t t = 0; t < n; ++t) {
    const bool keep = m[t] != T(0);  // a padded row's values (even inf or NaN) never enter
    const T* row = rows.row(t);
    for (int64_t x = 0; x < width; ++x) out[t * width + x] = keep ? row[x] : T(0);
  }
  return {out, width};
}

// A thread's diag(m) K [N, F] and diag(m) V [N, D] (buffers empty without a mask).
template <typename T>
struct MaskedKeyValues {
  std::vector<T> keys, values;

  MaskedKeyValues(const KeyMask<T>& mask, const AttentionDims& s)
      : keys(mask.values.empty() ? 0 : s.n * s.f), values(mask.values.empty() ? 0 : s.n * s.d) {}

  // k and v with the rows of masked-out keys zeroed, or k and v themselves when m is null.
  std::pair<Rows<const T>, Rows<const T>> apply(const T* m, Rows<const T> k, Rows<const T> v,
                                                const AttentionDims& s) {
    if (!m) return {k, v};
    return {masked_rows(k, m, s.n, s.f, keys.data()), masked_rows(v, m, s.n, s.d, values.data())};
  }
};

}  // namespace

Tensor bidirectional_linear_attention_forward(const Tensor& q_in, const Tensor& k_in,
                                              const Tensor& v_in, const Tensor& key_mask,
                                              const Tensor& segment_ids) {
  const char* op = "bidirectional_linear_attention";
  const AttentionDims s = check_dims(op, q_in, k_in, v_in);
  const DocumentRanges docs(op, segment_ids, s.groups, s.n);
  const auto [q, k, v, o, q_at, k_at, v_at, o_at] =
      slice_operands(q_in, k_in, v_in, attention_output(v_in));
  dispatch_floating(q.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    const KeyMask<T> mask = key_mask_of<T>(key_mask, q, op);
    parallel_for(s.groups, 2 * s.n * s.f * s.d, [&](int64_t g0, int64_t g1) {
      std::vector<T> kv(s.f * s.d);
      MaskedKeyValues<T> masked(mask, s);
      for (int64_t gi = g0; gi < g1; ++gi) {
        // Padded rows zeroed in both: diag(m) K and diag(m) V.
        const auto [keys, values] =
            masked.apply(mask.row(gi, s.n), slice_rows<const T>(k, k_at, gi),
                         slice_rows<const T>(v, v_at, gi), s);
        // Per document [a, a + n): KV[F, D] = K_docᵀ diag(m) V_doc, then O_doc[n, D] = Q_doc KV.
        for_each_document(docs, gi, s, [&](int64_t at, const AttentionDims& part, bool, bool) {
          const Rows<const T> qr = from_row(slice_rows<const T>(q, q_at, gi), at);
          const Rows<T> orow = from_row(slice_rows<T>(o, o_at, gi), at);
          const Rows<const T> kr = from_row(keys, at), vr = from_row(values, at);
          block_product(part.f, part.d, part.n, kr.at, 1, kr.ld, vr.at, vr.ld, kv.data(), part.d,
                        false);
          block_product(part.n, part.d, part.f, qr.at, qr.ld, 1, kv.data(), part.d, orow.at,
                        orow.ld, false);
        });
      }
    });
  });
  return o;
}

LinearAttentionGrads bidirectional_linear_attention_backward(const Tensor& q_in, const Tensor& k_in,
                                                             const Tensor& v_in, const Tensor& g_in,
                                                             const Tensor& key_mask,
                                                             const Tensor& segment_ids) {
  const char* op = "bidirectional_linear_attention_backward";
  const AttentionDims s = check_dims(op, q_in, k_in, v_in);
  const DocumentRanges docs(op, segment_ids, s.groups, s.n);
  ROTA_CHECK(g_in.shape() == v_in.shape(), "{}: grad {} for output {}", op, shape_str(g_in.shape()),
             shape_str(v_in.shape()));
  const auto [q, k, v, g, q_at, k_at, v_at, g_at] = slice_operands(q_in, k_in, v_in, g_in);
  LinearAttentionGrads grads = linear_attention_grads(q, k, v);
  const std::vector<int64_t> dv_at = matrix_offsets(grads.dv.shape(), grads.dv.strides());
  dispatch_floating(q.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    const KeyMask<T> mask = key_mask_of<T>(key_mask, q, op);
    parallel_for(s.groups, 4 * s.n * s.f * s.d, [&](int64_t g0, int64_t g1) {
      std::vector<T> kv(s.f * s.d);
      std::vector<T> dkv(s.f * s.d);
      std::vector<T> transposed(s.f * s.d);
      MaskedKeyValues<T> masked(mask, s);
      for (int64_t gi = g0; gi < g1; ++gi) {
        const Rows<const T> qr = slice_rows<const T>(q, q_at, gi);
        const Rows<const T> kr = slice_rows<const T>(k, k_at, gi);
        const Rows<const T> vr = slice_rows<const T>(v, v_at, gi);
        const Rows<const T> gr = slice_rows<const T>(g, g_at, gi);
        T* dq = grads.dq.template data<T>() + gi * s.n * s.f;
        T* dk = grads.dk.template data<T>() + gi * s.n * s.f;
        const Rows<T> dv = slice_rows<T>(grads.dv, dv_at, gi);
        const T* m = mask.row(gi, s.n);
        const auto [keys_all, values_all] = masked.apply(m, kr, vr, s);
        // Per document [a, a + n), each with its own KV and dKV.
        for_each_document(docs, gi, s, [&](int64_t at, const AttentionDims& p, bool, bool) {
          const Rows<const T> keys = from_row(keys_all, at), values = from_row(values_all, at);
          const Rows<const T> qd = from_row(qr, at), vd = from_row(vr, at), gd = from_row(gr, at);
          T* dq_doc = dq + at * s.f;
          T* dk_doc = dk + at * s.f;
          const Rows<T> dv_doc = from_row(dv, at);
          // KV[F, D] = Kᵀ diag(m) V and dKV[F, D] = Qᵀ dO.
          block_product(p.f, p.d, p.n, keys.at, 1, keys.ld, values.at, values.ld, kv.data(), p.d,
                        false);
          block_product(p.f, p.d, p.n, qd.at, 1, qd.ld, gd.at, gd.ld, dkv.data(), p.d, false);
          // dQ[n, F] = dO KVᵀ
          small_gemm::transpose_into(kv.data(), p.f, p.d, p.d, transposed.data());
          block_product(p.n, p.f, p.d, gd.at, gd.ld, 1, transposed.data(), p.f, dq_doc, p.f, false);
          // dK[n, F] = diag(m) V dKVᵀ and dV[n, D] = diag(m) K dKV.
          small_gemm::transpose_into(dkv.data(), p.f, p.d, p.d, transposed.data());
          block_product(p.n, p.f, p.d, vd.at, vd.ld, 1, transposed.data(), p.f, dk_doc, p.f, false);
          block_product(p.n, p.d, p.f, keys.at, keys.ld, 1, dkv.data(), p.d, dv_doc.at, dv_doc.ld,
                        false);
        });
        if (m) {  // padded keys get no gradient
          for (int64_t t = 0; t < s.n; ++t) {
            if (m[t] != T(0)) continue;
            std::fill(dk + t * s.f, dk + (t + 1) * s.f, T(0));
            std::fill(dv.row(t), dv.row(t) + s.d, T(0));
          }
        }
      }
    });
  });
  return grads;
}

Tensor causal_linear_attention_step(const Tensor& q_in, const Tensor& k_in, const Tensor& v_in,
                                    Tensor& state, const Tensor& decay) {
  const char* op = "causal_linear_attention_step";
  ROTA_CHECK(q_in.dim() == 2 && k_in.shape() == q_in.shape() && v_in.dim() == 2 &&
                 v_in.size(0) == q_in.size(0) && state.dim() == 3 &&
                 state.size(0) == q_in.size(0) && state.size(1) == q_in.size(1) &&
                 state.size(2) == v_in.size(1) && state.is_contiguous(),
             "{}: q {}, k {}, v {}, state {}: expected [G,F], [G,F], [G,D], contiguous [G,F,D]", op,
             shape_str(q_in.shape()), shape_str(k_in.shape()), shape_str(v_in.shape()),
             shape_str(state.shape()));
  const int64_t groups = q_in.size(0);
  const int64_t f = q_in.size(1);
  const int64_t d = v_in.size(1);
  const auto [q, k, v, o] = dense_operands(q_in, k_in, v_in);
  dispatch_floating(q.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    std::vector<T> gamma;
    if (decay.defined()) {
      ROTA_CHECK(decay.dim() == 1 && groups % decay.size(0) == 0,
                 "{}: decay {} does not divide {} slices", op, shape_str(decay.shape()), groups);
      for (double gm : decay.to_double_vector()) gamma.push_back(static_cast<T>(gm));
    }
    parallel_for(groups, 2 * f * d, [&](int64_t g0, int64_t g1) {
      for (int64_t gi = g0; gi < g1; ++gi) {
        T* st = state.data<T>() + gi * f * d;
        if (!gamma.empty()) {  // S = γ S + kᵀ v
          const T gm = gamma[gi % static_cast<int64_t>(gamma.size())];
          for (int64_t x = 0; x < f * d; ++x) st[x] *= gm;
        }
        outer_accumulate(st, k.data<T>() + gi * f, v.data<T>() + gi * d, f, d);
        row_times_matrix(o.data<T>() + gi * d, q.data<T>() + gi * f, st, f, d);
      }
    });
  });
  return o;
}

}  // namespace rota::backend
