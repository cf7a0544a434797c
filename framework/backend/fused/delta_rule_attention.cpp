// Delta-rule attention kernels: OpenMP over slices; block products and a solve per chunk.
#include "framework/backend/fused/delta_rule_attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "framework/backend/cpu/dispatch.h"
#include "framework/backend/cpu/isa_build.h"
#include "framework/backend/cpu/parallel.h"
#include "framework/backend/cpu/row_kernels.h"
#include "framework/backend/cpu/small_gemm.h"
#include "framework/backend/fused/attention_state.h"
#include "framework/backend/fused/document_ranges.h"

namespace rota::backend {

namespace {

struct DeltaDims {
  int64_t groups;  // G: product of leading dims
  int64_t n;       // N: sequence length
  int64_t f;       // F: key feature dim
  int64_t d;       // D: value dim
};

// q, k [..., N, F], v [..., N, D], beta [..., N], log_gate undefined or [..., N]; one dtype.
DeltaDims check_inputs(const char* op, const Tensor& q, const Tensor& k, const Tensor& v,
                       const Tensor& beta, const Tensor& log_gate) {
  ROTA_CHECK(q.defined() && k.defined() && v.defined() && beta.defined(),
             "{}: q, k, v and beta must be defined", op);
  bool ok = q.dim() >= 2 && k.shape() == q.shape() && v.dim() == q.dim();
  for (int64_t i = 0; ok && i + 1 < q.dim(); ++i) ok = q.size(i) == v.size(i);
  ROTA_CHECK(ok, "{}: q {}, k {}, v {}: expected q, k [..., N, F] and v [..., N, D]", op,
             shape_str(q.shape()), shape_str(k.shape()), shape_str(v.shape()));
  Shape rows(q.shape().begin(), q.shape().end() - 1);  // [..., N]
  ROTA_CHECK(beta.shape() == rows, "{}: beta {} does not fit q {} (expected {})", op,
             shape_str(beta.shape()), shape_str(q.shape()), shape_str(rows));
  if (log_gate.defined()) {
    ROTA_CHECK(log_gate.shape() == rows, "{}: log_gate {} does not fit q {} (expected {})", op,
               shape_str(log_gate.shape()), shape_str(q.shape()), shape_str(rows));
    ROTA_CHECK(log_gate.dtype() == q.dtype(), "{}: log_gate dtype {} differs from q's {}", op,
               dtype_name(log_gate.dtype()), dtype_name(q.dtype()));
  }
  ROTA_CHECK(k.dtype() == q.dtype() && v.dtype() == q.dtype() && beta.dtype() == q.dtype(),
             "{}: dtypes of q {}, k {}, v {}, beta {} differ", op, dtype_name(q.dtype()),
             dtype_name(k.dtype()), dtype_name(v.dtype()), dtype_name(beta.dtype()));
  DeltaDims s;
  s.n = q.size(-2);
  s.f = q.size(-1);
  s.d = v.size(-1);
  s.groups = 1;
  for (int64_t i = 0; i + 2 < q.dim(); ++i) s.groups *= q.size(i);
  return s;
}

using small_gemm::block_product;

// Rows of one block of the triangular solves: the products with the rows before (forward) or
// after (backward) the block are block products; only the pairs inside it are row updates.
constexpr int64_t kSolveBlock = 16;

// One slice's dense inputs: q, k [N, F], v [N, D], beta [N], gate [N] or null.
template <typename T>
struct Slice {
  const T* q;
  const T* k;
  const T* v;
  const T* beta;
  const T* gate;
};

// Per-thread scratch for chunks of at most C rows.
template <typename T>
struct DeltaScratch {
  std::vector<double> b;     // cumulative log-gates in the chunk: [C]
  std::vector<T> gamma;      // γ_r = e^(b_r): [C]
  std::vector<T> tail;       // e^(b_last − b_r): [C]
  std::vector<T> decay;      // Γ_rs = e^(b_r − b_s) for s ≤ r: [C, C]
  std::vector<T> kt;         // K_cᵀ: [F, C]
  std::vector<T> kk;         // K_c K_cᵀ: [C, C]
  std::vector<T> a;          // A = strictly_lower(diag(β) K Kᵀ ⊙ Γ): [C, C]
  std::vector<T> p;          // P = Q Kᵀ ⊙ Γ ⊙ tril: [C, C]
  std::vector<T> z;          // Z = V − diag(γ) K S: [C, D]
  std::vector<T> u;          // U = L⁻¹ diag(β) Z: [C, D]
  std::vector<T> rows;       // a row-scaled copy of Q_c or K_c: [C, F]
  std::vector<T> solve;      // a solve block's product with the other rows: [kSolveBlock, D]
  std::vector<T> ut;         // Uᵀ: [D, C]
  std::vector<T> du;         // [C, D]
  std::vector<T> dy;         // [C, D]
  std::vector<T> dp;         // [C, C]
  std::vector<T> tmp;        // [C, F]
  std::vector<T> st;         // a state transposed: [D, F]
  std::vector<double> db;    // ∂L/∂b_r: [C]
  std::vector<double> pair;  // one row's f64 terms of a gradient sum: [C]
  std::vector<T> us;         // U of every chunk of one slice (backward): [N, D]
  std::vector<T> states;     // chunk-start states of one slice (backward): [N/C, F, D]
  std::vector<T> ds;         // ∂L/∂S: [F, D]

  DeltaScratch(const DeltaDims& s, int64_t chunk, bool backward) {
    const int64_t c = std::min(chunk, std::max<int64_t>(s.n, 1));
    b.resize(c);
    gamma.resize(c);
    tail.resize(c);
    decay.resize(c * c);
    kt.resize(s.f * c);
    kk.resize(c * c);
    a.resize(c * c);
    p.resize(c * c);
    z.resize(c * s.d);
    u.resize(c * s.d);
    rows.resize(c * s.f);
    solve.resize(kSolveBlock * s.d);
    if (!backward) return;
    ut.resize(s.d * c);
    du.resize(c * s.d);
    dy.resize(c * s.d);
    dp.resize(c * c);
    tmp.resize(c * s.f);
    st.resize(s.d * s.f);
    db.resize(c);
    pair.resize(c);
    us.resize(s.n * s.d);
    states.resize(((s.n + chunk - 1) / chunk) * s.f * s.d);
    ds.resize(s.f * s.d);
  }
};

// For chunk [c0, c0 + len) with chunk-start state S [F, D] (zero when first): the gate
// factors, A, P (when need_p), Z = V − diag(γ) K S and U = L⁻¹ diag(β) Z, into w. known_u: U of
// this chunk computed before ([len, D], copied instead of solving again) or null.
template <typename T>
void prepare_chunk(const Slice<T>& x, const DeltaDims& s, int64_t c0, int64_t len, const T* state,
                   bool first, bool need_p, const T* known_u, DeltaScratch<T>& w) {
  const int64_t f = s.f, d = s.d;
  const T* kc = x.k + c0 * f;
  const T* beta = x.beta + c0;
  // Gate factors, from cumulative log-gates relative to the chunk start (every factor ≤ 1).
  double acc = 0;
  for (int64_t r = 0; r < len; ++r) {
    acc += x.gate ? static_cast<double>(x.gate[c0 + r]) : 0.0;
    w.b[r] = acc;
  }
  // Every exponent is a difference of f64 sums, ≤ 0, rounded to T before the (vector f32) exp;
  // Γ is read only for s ≤ r.
  if (x.gate) {
    for (int64_t r = 0; r < len; ++r) {
      w.gamma[r] = static_cast<T>(w.b[r]);
      w.tail[r] = static_cast<T>(w.b[len - 1] - w.b[r]);
      T* decay_row = w.decay.data() + r * len;
      for (int64_t c = 0; c <= r; ++c) decay_row[c] = static_cast<T>(w.b[r] - w.b[c]);
      exp_inplace(decay_row, r + 1);
    }
    exp_inplace(w.gamma.data(), len);
    exp_inplace(w.tail.data(), len);
  } else {
    std::fill(w.gamma.begin(), w.gamma.begin() + len, T(1));
    std::fill(w.tail.begin(), w.tail.begin() + len, T(1));
    for (int64_t r = 0; r < len; ++r) {
      std::fill(w.decay.begin() + r * len, w.decay.begin() + r * len + r + 1, T(1));
    }
  }
  // K_cᵀ [F, len]; KK = K_c K_cᵀ [len, len]; A_rs = β_r Γ_rs KK_rs for s < r.
  small_gemm::transpose_into(kc, len, f, f, w.kt.data());
  block_product(len, len, f, kc, f, int64_t{1}, w.kt.data(), len, w.kk.data(), len, false);
  for (int64_t r = 0; r < len; ++r) {
    for (int64_t c = 0; c < len; ++c) {
      w.a[r * len + c] = c < r ? beta[r] * w.decay[r * len + c] * w.kk[r * len + c] : T(0);
    }
  }
  if (need_p) {  // P_rs = Γ_rs (q_r·k_s) for s ≤ r: [len, len]
    block_product(len, len, f, x.q + c0 * f, f, int64_t{1}, w.kt.data(), len, w.p.data(), len,
                  false);
    for (int64_t r = 0; r < len; ++r) {
      for (int64_t c = 0; c < len; ++c) {
        T& e = w.p[r * len + c];
        e = c <= r ? e * w.decay[r * len + c] : T(0);
      }
    }
  }
  // Z = V_c − diag(γ) K_c S [len, D]
  const T* vc = x.v + c0 * d;
  if (first) {
    std::copy(vc, vc + len * d, w.z.data());
  } else {
    block_product(len, d, f, kc, f, int64_t{1}, state, d, w.z.data(), d, false);
    for (int64_t r = 0; r < len; ++r) {
      const T gr = w.gamma[r];
      T* zr = w.z.data() + r * d;
#pragma omp simd
      for (int64_t e = 0; e < d; ++e) zr[e] = vc[r * d + e] - gr * zr[e];
    }
  }
  if (known_u) {
    std::copy(known_u, known_u + len * d, w.u.data());
    return;
  }
  // U = L⁻¹ diag(β) Z by forward substitution, u_r = β_r z_r − Σ_{s<r} A_rs u_s, in blocks I of
  // rows: U_I = diag(β) Z_I − A[I, <I] U[<I] (a block product), then the pairs inside I.
  for (int64_t i0 = 0; i0 < len; i0 += kSolveBlock) {
    const int64_t i1 = std::min(len, i0 + kSolveBlock);
    T* before = w.solve.data();  // A[I, <I] U[<I]: [i1 − i0, D]
    if (i0 > 0) {
      block_product(i1 - i0, d, i0, w.a.data() + i0 * len, len, int64_t{1}, w.u.data(), d, before,
                    d, false);
    }
    for (int64_t r = i0; r < i1; ++r) {
      T* ur = w.u.data() + r * d;
      const T* zr = w.z.data() + r * d;
      const T br = beta[r];
      if (i0 > 0) {
        const T* before_r = before + (r - i0) * d;
#pragma omp simd
        for (int64_t e = 0; e < d; ++e) ur[e] = br * zr[e] - before_r[e];
      } else {
#pragma omp simd
        for (int64_t e = 0; e < d; ++e) ur[e] = br * zr[e];
      }
      for (int64_t c = i0; c < r; ++c) axpy_row(ur, -w.a[r * len + c], w.u.data() + c * d, d);
    }
  }
}

// S [F, D] ← γ_last S + (diag(tail) K_c)ᵀ U: the state after the chunk prepared in w.
template <typename T>
void advance_state(const Slice<T>& x, const DeltaDims& s, int64_t c0, int64_t len, T* state,
                   DeltaScratch<T>& w) {
  const int64_t f = s.f, d = s.d;
  const T* kc = x.k + c0 * f;
  const T* keys = kc;
  if (x.gate) {
    const T gl = w.gamma[len - 1];
    for (int64_t e = 0; e < f * d; ++e) state[e] *= gl;
    for (int64_t r = 0; r < len; ++r) {
      for (int64_t e = 0; e < f; ++e) w.rows[r * f + e] = w.tail[r] * kc[r * f + e];
    }
    keys = w.rows.data();
  }
  block_product(f, d, len, keys, int64_t{1}, f, w.u.data(), d, state, d, true);
}

// Chunked forward of one slice: o [N, D] (dense). state: [F, D] scratch. initial: S₀ [F, D] (the
// state before row 0) or null (zeros); final_state: where S_N [F, D] goes, or null.
template <typename T>
void forward_slice(const Slice<T>& x, const DeltaDims& s, int64_t chunk, T* o, T* state,
                   DeltaScratch<T>& w, const T* initial, T* final_state) {
  const int64_t f = s.f, d = s.d;
  if (initial) {
    std::copy(initial, initial + f * d, state);
  } else {
    std::fill(state, state + f * d, T(0));
  }
  for (int64_t c0 = 0; c0 < s.n; c0 += chunk) {
    const int64_t len = std::min(chunk, s.n - c0);
    const bool first = c0 == 0 && !initial;  // the chunk-start state is zero
    prepare_chunk(x, s, c0, len, state, first, true, static_cast<const T*>(nullptr), w);
    T* oc = o + c0 * d;
    // O_c = diag(γ) Q_c S + P U
    if (!first) {
      block_product(len, d, f, x.q + c0 * f, f, int64_t{1}, state, d, oc, d, false);
      if (x.gate) {
        for (int64_t r = 0; r < len; ++r) {
          for (int64_t e = 0; e < d; ++e) oc[r * d + e] *= w.gamma[r];
        }
      }
    }
    block_product(len, d, len, w.p.data(), len, int64_t{1}, w.u.data(), d, oc, d, !first);
    advance_state(x, s, c0, len, state, w);
  }
  if (final_state) std::copy(state, state + f * d, final_state);
}

// Chunked backward of one slice. g = dO [N, D]; dq, dk [N, F], dv [N, D], dbeta [N], dgate [N]
// (null without a gate), all dense. Per chunk (reverse order) with S = the chunk-start state,
// dS = ∂L/∂(state after the chunk), y the right-hand side diag(β) Z of the solve:
//   dU = Pᵀ dO + diag(tail) K dS;  dP = dO Uᵀ (⊙ tril): dQ = (dP ⊙ Γ) K, dK = (dP ⊙ Γ)ᵀ Q;
//   dQ += diag(γ) dO Sᵀ;  dK += diag(tail) U dSᵀ;  dY = L⁻ᵀ dU;  dA = −dY Uᵀ (strictly lower):
//   dβ_r = Σ_s dA_rs Γ_rs KK_rs + dY_r·Z_r,  dK += (dKK + dKKᵀ) K with dKK = diag(β) dA ⊙ Γ;
//   dV = diag(β) dY;  dK −= diag(γ) dV Sᵀ;  dS ← γ_last dS + Qᵀ diag(γ) dO − Kᵀ diag(γ) dV;
// and the log-gate terms via ∂/∂b of every e^(b_r − b_s) factor, dg_s = Σ_{r≥s} db_r.
// State carry: initial S₀ [F, D] or null makes the first chunk one like any other (its start
// state S₀); grad_final dL/dS_N [F, D] or null is the dS after the last chunk; d_initial: where
// dL/dS₀ (the dS before the first chunk) goes, or null.
template <typename T>
void backward_slice(const Slice<T>& x, const DeltaDims& s, int64_t chunk, const T* g, T* dq, T* dk,
                    T* dv, T* dbeta, T* dgate, T* state, DeltaScratch<T>& w, const T* initial,
                    const T* grad_final, T* d_initial) {
  const int64_t f = s.f, d = s.d;
  const int64_t chunks = (s.n + chunk - 1) / chunk;
  const bool gated = x.gate != nullptr;
  // Forward sweep: the chunk-start states, and U of every chunk but the last (the reverse sweep
  // reuses it instead of solving again).
  if (initial) {
    std::copy(initial, initial + f * d, state);
  } else {
    std::fill(state, state + f * d, T(0));
  }
  for (int64_t ci = 0; ci < chunks; ++ci) {
    const int64_t c0 = ci * chunk;
    const int64_t len = std::min(chunk, s.n - c0);
    std::copy(state, state + f * d, w.states.data() + ci * f * d);
    if (ci + 1 == chunks) break;
    prepare_chunk(x, s, c0, len, state, ci == 0 && !initial, false, static_cast<const T*>(nullptr),
                  w);
    std::copy(w.u.data(), w.u.data() + len * d, w.us.data() + c0 * d);
    advance_state(x, s, c0, len, state, w);
  }
  // Reverse sweep carrying dS.
  T* ds = w.ds.data();
  bool has_ds = grad_final != nullptr;  // dS is non-zero (a later chunk or dL/dS_N exists)
  if (grad_final) std::copy(grad_final, grad_final + f * d, ds);
  for (int64_t ci = chunks - 1; ci >= 0; --ci) {
    const int64_t c0 = ci * chunk;
    const int64_t len = std::min(chunk, s.n - c0);
    const bool first = ci == 0 && !initial;  // the chunk-start state is zero
    const T* s0 = w.states.data() + ci * f * d;
    const T* known_u = ci + 1 < chunks ? w.us.data() + c0 * d : nullptr;
    prepare_chunk(x, s, c0, len, s0, first, true, known_u, w);
    const T* qc = x.q + c0 * f;
    const T* kc = x.k + c0 * f;
    const T* gc = g + c0 * d;
    const T* beta = x.beta + c0;
    T* dqc = dq + c0 * f;
    T* dkc = dk + c0 * f;
    T* dvc = dv + c0 * d;
    std::fill(w.db.begin(), w.db.begin() + len, 0.0);
    // Keys weighted by tail_r (to the chunk end): [len, F].
    const T* tail_keys = kc;
    if (gated) {
      for (int64_t r = 0; r < len; ++r) {
        for (int64_t e = 0; e < f; ++e) w.rows[r * f + e] = w.tail[r] * kc[r * f + e];
      }
      tail_keys = w.rows.data();
    }
    // dU = Pᵀ dO + diag(tail) K dS [len, D]
    block_product(len, d, len, w.p.data(), int64_t{1}, len, gc, d, w.du.data(), d, false);
    if (has_ds) block_product(len, d, f, tail_keys, f, int64_t{1}, ds, d, w.du.data(), d, true);
    // dP = dO Uᵀ [len, len], kept for s ≤ r.
    small_gemm::transpose_into(w.u.data(), len, d, d, w.ut.data());
    block_product(len, len, d, gc, d, int64_t{1}, w.ut.data(), len, w.dp.data(), len, false);
    for (int64_t r = 0; r < len; ++r) {
      T* dp_row = w.dp.data() + r * len;
      const T* decay_row = w.decay.data() + r * len;
      if (gated) {  // ∂/∂b of Γ_rs = e^(b_r − b_s) in P_rs: t_s = dP_rs P_rs
        const T* p_row = w.p.data() + r * len;
        double* t = w.pair.data();
        for (int64_t c = 0; c <= r; ++c) {
          t[c] = static_cast<double>(dp_row[c]) * static_cast<double>(p_row[c]);
        }
        w.db[r] += sum_row(t, r + 1);
        for (int64_t c = 0; c <= r; ++c) w.db[c] -= t[c];
      }
      for (int64_t c = 0; c <= r; ++c) dp_row[c] *= decay_row[c];
      std::fill(dp_row + r + 1, dp_row + len, T(0));
    }
    // dQ = (dP ⊙ Γ) K_c, dK = (dP ⊙ Γ)ᵀ Q_c
    block_product(len, f, len, w.dp.data(), len, int64_t{1}, kc, f, dqc, f, false);
    block_product(len, f, len, w.dp.data(), int64_t{1}, len, qc, f, dkc, f, false);
    if (!first) {
      // dQ += diag(γ) dO Sᵀ; db_r += γ_r q_r·(dO_r Sᵀ)
      small_gemm::transpose_into(s0, f, d, d, w.st.data());
      block_product(len, f, d, gc, d, int64_t{1}, w.st.data(), f, w.tmp.data(), f, false);
      for (int64_t r = 0; r < len; ++r) {
        const T* tr = w.tmp.data() + r * f;
        axpy_row(dqc + r * f, w.gamma[r], tr, f);
        if (gated) w.db[r] += static_cast<double>(w.gamma[r] * dot_row(qc + r * f, tr, f));
      }
    }
    if (has_ds) {
      // dK += diag(tail) U dSᵀ; the tail factors e^(b_last − b_r) and γ_last in γ_last S.
      small_gemm::transpose_into(ds, f, d, d, w.st.data());
      block_product(len, f, d, w.u.data(), d, int64_t{1}, w.st.data(), f, w.tmp.data(), f, false);
      for (int64_t r = 0; r < len; ++r) {
        const T* tr = w.tmp.data() + r * f;
        axpy_row(dkc + r * f, w.tail[r], tr, f);
        if (gated) {
          const double t = static_cast<double>(w.tail[r] * dot_row(kc + r * f, tr, f));
          w.db[len - 1] += t;
          w.db[r] -= t;
        }
      }
      if (gated && !first) {
        w.db[len - 1] += static_cast<double>(w.gamma[len - 1] * dot_row(s0, ds, f * d));
      }
    }
    // dY = L⁻ᵀ dU by back substitution, dy_r = du_r − Σ_{s>r} A_sr dy_s, in blocks I of rows
    // from the last: dY_I = dU_I − A[>I, I]ᵀ dY[>I] (a block product), then the pairs inside I.
    std::copy(w.du.data(), w.du.data() + len * d, w.dy.data());
    const int64_t last_block = ((len - 1) / kSolveBlock) * kSolveBlock;
    for (int64_t i0 = last_block; i0 >= 0; i0 -= kSolveBlock) {
      const int64_t i1 = std::min(len, i0 + kSolveBlock);
      if (i1 < len) {
        T* after = w.solve.data();  // A[>I, I]ᵀ dY[>I]: [i1 − i0, D]
        block_product(i1 - i0, d, len - i1, w.a.data() + i1 * len + i0, int64_t{1}, len,
                      w.dy.data() + i1 * d, d, after, d, false);
        for (int64_t x = 0; x < (i1 - i0) * d; ++x) w.dy[i0 * d + x] -= after[x];
      }
      for (int64_t r2 = i1 - 1; r2 >= i0; --r2) {
        const T* yr = w.dy.data() + r2 * d;
        for (int64_t c = i0; c < r2; ++c) {
          axpy_row(w.dy.data() + c * d, -w.a[r2 * len + c], yr, d);
        }
      }
    }
    // dA = −dY Uᵀ for s < r (reusing dp): β, gate and K K terms; sym = dKK + dKKᵀ.
    block_product(len, len, d, w.dy.data(), d, int64_t{1}, w.ut.data(), len, w.dp.data(), len,
                  false);
    for (int64_t r = 0; r < len; ++r) {
      T* dp_row = w.dp.data() + r * len;  // −dA_r
      const T* decay_row = w.decay.data() + r * len;
      const T* kk_row = w.kk.data() + r * len;
      double* t = w.pair.data();
      for (int64_t c = 0; c < r; ++c) {
        t[c] = static_cast<double>(-dp_row[c] * decay_row[c] * kk_row[c]);
      }
      double dbeta_r = sum_row(t, r);
      if (gated) {  // t_s = dA_rs A_rs
        const T* a_row = w.a.data() + r * len;
        for (int64_t c = 0; c < r; ++c) {
          t[c] = -static_cast<double>(dp_row[c]) * static_cast<double>(a_row[c]);
        }
        w.db[r] += sum_row(t, r);
        for (int64_t c = 0; c < r; ++c) w.db[c] -= t[c];
      }
      const T br = beta[r];
      for (int64_t c = 0; c < r; ++c) dp_row[c] = -dp_row[c] * br * decay_row[c];
      dbeta_r += static_cast<double>(dot_row(w.dy.data() + r * d, w.z.data() + r * d, d));
      dbeta[c0 + r] = static_cast<T>(dbeta_r);
    }
    for (int64_t r = 0; r < len; ++r) {
      w.dp[r * len + r] = T(0);
      for (int64_t c = r + 1; c < len; ++c) w.dp[r * len + c] = w.dp[c * len + r];
    }
    block_product(len, f, len, w.dp.data(), len, int64_t{1}, kc, f, dkc, f, true);
    // dV = diag(β) dY
    for (int64_t r = 0; r < len; ++r) {
      const T br = beta[r];
      for (int64_t e = 0; e < d; ++e) dvc[r * d + e] = br * w.dy[r * d + e];
    }
    if (!first) {
      // Z = V − diag(γ) K S: dK −= diag(γ) dV Sᵀ, db_r −= γ_r k_r·(dV_r Sᵀ); st holds Sᵀ again.
      small_gemm::transpose_into(s0, f, d, d, w.st.data());
      block_product(len, f, d, dvc, d, int64_t{1}, w.st.data(), f, w.tmp.data(), f, false);
      for (int64_t r = 0; r < len; ++r) {
        const T* tr = w.tmp.data() + r * f;
        axpy_row(dkc + r * f, -w.gamma[r], tr, f);
        if (gated) w.db[r] -= static_cast<double>(w.gamma[r] * dot_row(kc + r * f, tr, f));
      }
      // dS ← γ_last dS + (diag(γ) Q_c)ᵀ dO − (diag(γ) K_c)ᵀ dV
      if (!has_ds) {
        std::fill(ds, ds + f * d, T(0));
      } else if (gated) {
        for (int64_t e = 0; e < f * d; ++e) ds[e] *= w.gamma[len - 1];
      }
      for (int64_t r = 0; r < len; ++r) {
        for (int64_t e = 0; e < f; ++e) w.rows[r * f + e] = w.gamma[r] * qc[r * f + e];
      }
      block_product(f, d, len, w.rows.data(), int64_t{1}, f, gc, d, ds, d, true);
      for (int64_t r = 0; r < len; ++r) {
        for (int64_t e = 0; e < f; ++e) w.rows[r * f + e] = -w.gamma[r] * kc[r * f + e];
      }
      block_product(f, d, len, w.rows.data(), int64_t{1}, f, dvc, d, ds, d, true);
      has_ds = true;
    }
    if (gated) {  // b_r = Σ_{s≤r} g_s within the chunk
      double acc = 0;
      for (int64_t r = len - 1; r >= 0; --r) {
        acc += w.db[r];
        dgate[c0 + r] = static_cast<T>(acc);
      }
    }
  }
  // dL/dS₀: the dS before the first chunk (dL/dS_N itself when there are no rows).
  if (d_initial) {
    if (has_ds) {
      std::copy(ds, ds + f * d, d_initial);
    } else {
      std::fill(d_initial, d_initial + f * d, T(0));
    }
  }
}

// ---- Instruction-set builds ----
//
// The f32 slice kernels are compiled for AVX-512, AVX2+FMA and plain x86-64 (isa_build.h) and
// picked once at run time (vecmath::best_isa(), capped by ROTA_MAX_CPU_ISA): `flatten` inlines
// the row loops above (the substitutions, the gate factors, the masks) into each build so they
// run at its vector width; the block products dispatch on their own. The builds may differ in
// the last bits (FMA contraction); each is deterministic. f64 (the references and gradient
// checks) runs the portable code. The entry points below pick the build with
// vecmath::f32_build_or_portable.

// One token of the recurrence on a state st [F, D]: S = α S; u = β (v − k S); S += kᵀ u;
// o = q S. u: [D] scratch.
template <typename T>
void recurrent_token(const T* q, const T* k, const T* v, T beta, T alpha, T* st, T* o, T* u,
                     int64_t f, int64_t d) {
  if (alpha != T(1)) {
    for (int64_t e = 0; e < f * d; ++e) st[e] *= alpha;
  }
  for (int64_t e = 0; e < d; ++e) u[e] = v[e];
  for (int64_t r = 0; r < f; ++r) axpy_row(u, -k[r], st + r * d, d);
  for (int64_t e = 0; e < d; ++e) u[e] *= beta;
  for (int64_t r = 0; r < f; ++r) axpy_row(st + r * d, k[r], u, d);
  std::fill(o, o + d, T(0));
  for (int64_t r = 0; r < f; ++r) axpy_row(o, q[r], st + r * d, d);
}

// Dense inputs: contiguous copies (or the tensors themselves).
struct DenseInputs {
  Tensor q, k, v, beta, gate;
};

DenseInputs dense_inputs(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& beta,
                         const Tensor& log_gate) {
  return {q.contiguous(), k.contiguous(), v.contiguous(), beta.contiguous(),
          log_gate.defined() ? log_gate.contiguous() : Tensor()};
}

template <typename T>
Slice<T> slice_of(const DenseInputs& in, const DeltaDims& s, int64_t g, int64_t first = 0) {
  const int64_t row = g * s.n + first;  // the slice's row `first`
  return {in.q.data<T>() + row * s.f, in.k.data<T>() + row * s.f, in.v.data<T>() + row * s.d,
          in.beta.data<T>() + row, in.gate.defined() ? in.gate.data<T>() + row : nullptr};
}

}  // namespace

Tensor delta_rule_attention_forward(const Tensor& q_in, const Tensor& k_in, const Tensor& v_in,
                                    const Tensor& beta_in, const Tensor& log_gate,
                                    int64_t chunk_size, const Tensor& initial_in,
                                    Tensor* final_state, const Tensor& segment_ids) {
  const char* op = "delta_rule_attention";
  const DeltaDims s = check_inputs(op, q_in, k_in, v_in, beta_in, log_gate);
  const DocumentRanges docs(op, segment_ids, s.groups, s.n);
  ROTA_CHECK(chunk_size >= 1, "{}: chunk size must be >= 1, got {}", op, chunk_size);
  const Tensor initial = dense_attention_state(op, "initial state", initial_in, q_in, v_in);
  const DenseInputs in = dense_inputs(q_in, k_in, v_in, beta_in, log_gate);
  Tensor o = Tensor::empty(v_in.shape(), v_in.dtype());
  if (final_state) *final_state = Tensor::empty(attention_state_shape(q_in, v_in), q_in.dtype());
  dispatch_floating(in.q.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    const int64_t c = std::min(chunk_size, std::max<int64_t>(s.n, 1));
    const auto slice_kernel =
        vecmath::f32_build_or_portable<T, &forward_slice<float>, &forward_slice<double>>();
    parallel_for(s.groups, s.n * (c + s.f + 1) * (s.d + 1), [&](int64_t g0, int64_t g1) {
      DeltaScratch<T> scratch(s, chunk_size, false);
      std::vector<T> state(s.f * s.d);
      for (int64_t g = g0; g < g1; ++g) {
        for_each_document(
            docs, g, s, [&](int64_t at, const DeltaDims& part, bool first, bool last) {
              slice_kernel(slice_of<T>(in, s, g, at), part, chunk_size,
                           o.data<T>() + (g * s.n + at) * s.d, state.data(), scratch,
                           first ? attention_state_slice<const T>(initial, s.f, s.d, g) : nullptr,
                           final_state && last ? attention_state_slice<T>(*final_state, s.f, s.d, g)
                                               : nullptr);
            });
      }
    });
  });
  return o;
}

DeltaRuleGrads delta_rule_attention_backward(const Tensor& q_in, const Tensor& k_in,
                                             const Tensor& v_in, const Tensor& beta_in,
                                             const Tensor& log_gate, const Tensor& grad_out,
                                             int64_t chunk_size, const Tensor& initial_in,
                                             const Tensor& grad_final_in,
                                             const Tensor& segment_ids) {
  const char* op = "delta_rule_attention_backward";
  const DeltaDims s = check_inputs(op, q_in, k_in, v_in, beta_in, log_gate);
  const DocumentRanges docs(op, segment_ids, s.groups, s.n);
  ROTA_CHECK(
      grad_out.defined() && grad_out.shape() == v_in.shape() && grad_out.dtype() == v_in.dtype(),
      "{}: grad {} for output {}", op,
      grad_out.defined() ? shape_str(grad_out.shape()) : std::string("undefined"),
      shape_str(v_in.shape()));
  ROTA_CHECK(chunk_size >= 1, "{}: chunk size must be >= 1, got {}", op, chunk_size);
  const Tensor initial = dense_attention_state(op, "initial state", initial_in, q_in, v_in);
  const Tensor grad_final =
      dense_attention_state(op, "final state's gradient", grad_final_in, q_in, v_in);
  const DenseInputs in = dense_inputs(q_in, k_in, v_in, beta_in, log_gate);
  const Tensor g = grad_out.contiguous();
  DeltaRuleGrads grads{
      Tensor::empty(q_in.shape(), q_in.dtype()),
      Tensor::empty(k_in.shape(), k_in.dtype()),
      Tensor::empty(v_in.shape(), v_in.dtype()),
      Tensor::empty(beta_in.shape(), beta_in.dtype()),
      log_gate.defined() ? Tensor::empty(log_gate.shape(), log_gate.dtype()) : Tensor(),
      initial.defined() ? Tensor::empty(initial.shape(), q_in.dtype()) : Tensor()};
  dispatch_floating(in.q.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    const int64_t c = std::min(chunk_size, std::max<int64_t>(s.n, 1));
    const auto slice_kernel =
        vecmath::f32_build_or_portable<T, &backward_slice<float>, &backward_slice<double>>();
    parallel_for(s.groups, 3 * s.n * (c + s.f + 1) * (s.d + 1), [&](int64_t g0, int64_t g1) {
      DeltaScratch<T> scratch(s, chunk_size, true);
      std::vector<T> state(s.f * s.d);
      for (int64_t gi = g0; gi < g1; ++gi) {
        for_each_document(
            docs, gi, s, [&](int64_t at, const DeltaDims& part, bool first, bool last) {
              const int64_t row = gi * s.n + at;
              slice_kernel(
                  slice_of<T>(in, s, gi, at), part, chunk_size, g.data<T>() + row * s.d,
                  grads.dq.template data<T>() + row * s.f, grads.dk.template data<T>() + row * s.f,
                  grads.dv.template data<T>() + row * s.d, grads.dbeta.template data<T>() + row,
                  grads.dlog_gate.defined() ? grads.dlog_gate.template data<T>() + row : nullptr,
                  state.data(), scratch,
                  first ? attention_state_slice<const T>(initial, s.f, s.d, gi) : nullptr,
                  last ? attention_state_slice<const T>(grad_final, s.f, s.d, gi) : nullptr,
                  first ? attention_state_slice<T>(grads.d_initial_state, s.f, s.d, gi) : nullptr);
            });
      }
    });
  });
  return grads;
}

Tensor delta_rule_attention_recurrent(const Tensor& q_in, const Tensor& k_in, const Tensor& v_in,
                                      const Tensor& beta_in, const Tensor& log_gate) {
  const char* op = "delta_rule_attention_recurrent";
  const DeltaDims s = check_inputs(op, q_in, k_in, v_in, beta_in, log_gate);
  const DenseInputs in = dense_inputs(q_in, k_in, v_in, beta_in, log_gate);
  Tensor o = Tensor::empty(v_in.shape(), v_in.dtype());
  dispatch_floating(in.q.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    parallel_for(s.groups, s.n * (s.f + 1) * (s.d + 1), [&](int64_t g0, int64_t g1) {
      std::vector<T> st(s.f * s.d), u(s.d);
      for (int64_t g = g0; g < g1; ++g) {
        const Slice<T> x = slice_of<T>(in, s, g);
        T* po = o.data<T>() + g * s.n * s.d;
        std::fill(st.begin(), st.end(), T(0));
        for (int64_t t = 0; t < s.n; ++t) {
          const T alpha = x.gate ? static_cast<T>(std::exp(static_cast<double>(x.gate[t]))) : T(1);
          recurrent_token(x.q + t * s.f, x.k + t * s.f, x.v + t * s.d, x.beta[t], alpha, st.data(),
                          po + t * s.d, u.data(), s.f, s.d);
        }
      }
    });
  });
  return o;
}

Tensor delta_rule_attention_step(const Tensor& q_in, const Tensor& k_in, const Tensor& v_in,
                                 const Tensor& beta_in, const Tensor& log_gate, Tensor& state) {
  const char* op = "delta_rule_attention_step";
  ROTA_CHECK(
      q_in.defined() && k_in.defined() && v_in.defined() && beta_in.defined() && state.defined(),
      "{}: q, k, v, beta and state must be defined", op);
  const bool shapes_ok = q_in.dim() == 2 && k_in.shape() == q_in.shape() && v_in.dim() == 2 &&
                         v_in.size(0) == q_in.size(0) && beta_in.dim() == 1 &&
                         beta_in.size(0) == q_in.size(0) &&
                         (!log_gate.defined() || log_gate.shape() == beta_in.shape()) &&
                         state.dim() == 3 && state.size(0) == q_in.size(0) &&
                         state.size(1) == q_in.size(1) && state.size(2) == v_in.size(1);
  ROTA_CHECK(shapes_ok && state.is_contiguous(),
             "{}: q {}, k {}, v {}, beta {}, log_gate {}, state {}: expected [G,F], [G,F], [G,D], "
             "[G], undefined or [G], contiguous [G,F,D]",
             op, shape_str(q_in.shape()), shape_str(k_in.shape()), shape_str(v_in.shape()),
             shape_str(beta_in.shape()),
             log_gate.defined() ? shape_str(log_gate.shape()) : std::string("undefined"),
             shape_str(state.shape()));
  const DType dt = q_in.dtype();
  ROTA_CHECK(k_in.dtype() == dt && v_in.dtype() == dt && beta_in.dtype() == dt &&
                 state.dtype() == dt && (!log_gate.defined() || log_gate.dtype() == dt),
             "{}: dtypes differ (q {}, state {})", op, dtype_name(dt), dtype_name(state.dtype()));
  const int64_t groups = q_in.size(0), f = q_in.size(1), d = v_in.size(1);
  const DenseInputs in = dense_inputs(q_in, k_in, v_in, beta_in, log_gate);
  Tensor o = Tensor::empty({groups, d}, dt);
  dispatch_floating(dt, op, [&](auto tag) {
    using T = decltype(tag);
    parallel_for(groups, 4 * f * d, [&](int64_t g0, int64_t g1) {
      std::vector<T> u(d);
      for (int64_t g = g0; g < g1; ++g) {
        const T alpha = in.gate.defined()
                            ? static_cast<T>(std::exp(static_cast<double>(in.gate.data<T>()[g])))
                            : T(1);
        recurrent_token(in.q.data<T>() + g * f, in.k.data<T>() + g * f, in.v.data<T>() + g * d,
                        in.beta.data<T>()[g], alpha, state.data<T>() + g * f * d,
                        o.data<T>() + g * d, u.data(), f, d);
      }
    });
  });
  return o;
}

}  // namespace rota::backend
