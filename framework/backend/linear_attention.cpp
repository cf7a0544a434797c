// Linear attention kernels: per (batch, head) slice, OpenMP across slices, simd along D.
#include "framework/backend/linear_attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "framework/backend/dispatch.h"
#include "framework/backend/parallel.h"

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

// out[D] += a * x[D]
template <typename T>
inline void axpy_row(T* out, T a, const T* x, int64_t d) {
#pragma omp simd
  for (int64_t i = 0; i < d; ++i) out[i] += a * x[i];
}

template <typename T>
inline T dot_row(const T* a, const T* b, int64_t n) {
  T acc = 0;
#pragma omp simd reduction(+ : acc)
  for (int64_t i = 0; i < n; ++i) acc += a[i] * b[i];
  return acc;
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

// M[F, D] += w · a[F]ᵀ b[D]
template <typename T>
inline void scaled_outer_accumulate(T* m, T w, const T* a, const T* b, int64_t f, int64_t d) {
  for (int64_t r = 0; r < f; ++r) axpy_row(m + r * d, w * a[r], b, d);
}

// out[F] += M[F, D] · y[D]  (i.e. y · Mᵀ)
template <typename T>
inline void matrix_times_row(T* out, const T* m, const T* y, int64_t f, int64_t d) {
  for (int64_t r = 0; r < f; ++r) out[r] += dot_row(m + r * d, y, d);
}

// Moves the key state past chunk [c0, c1): S = γ^(c1−c0) S + Σ_{c0≤j<c1} γ^(c1−1−j) k_jᵀ v_j
// (γ = 1 without decay). Shared by the forward pass and the backward's forward sweep.
// state: [F, D]; k: [N, F]; v: [N, D]; pw: powers γ^0..γ^C or null.
template <typename T>
void advance_key_state(T* state, const T* k, const T* v, int64_t c0, int64_t c1,
                       const AttentionDims& s, const T* pw) {
  if (pw) {
    for (int64_t x = 0; x < s.f * s.d; ++x) state[x] *= pw[c1 - c0];
  }
  for (int64_t j = c0; j < c1; ++j) {
    if (pw) {
      scaled_outer_accumulate(state, pw[c1 - 1 - j], k + j * s.f, v + j * s.d, s.f, s.d);
    } else {
      outer_accumulate(state, k + j * s.f, v + j * s.d, s.f, s.d);
    }
  }
}

// One slice of the causal forward. q, k: [N, F], v, o: [N, D]; state: [F, D] scratch.
// With a decay γ the weights become γ^(i−j): o_i = Σ_{j≤i} γ^(i−j) (q_i·k_j) v_j. The state
// then holds S = Σ_{j<c0} γ^(c0−1−j) k_jᵀ v_j, so every power stays ≤ 1 (no overflow).
// pw: [C+1] powers γ^0..γ^C.
template <typename T>
void causal_forward_slice(const T* q, const T* k, const T* v, T* o, T* state,
                          const AttentionDims& s, int64_t chunk, const T* pw) {
  std::fill(state, state + s.f * s.d, T(0));
  std::fill(o, o + s.n * s.d, T(0));
  for (int64_t c0 = 0; c0 < s.n; c0 += chunk) {
    const int64_t c1 = std::min(s.n, c0 + chunk);
    for (int64_t i = c0; i < c1; ++i) {
      T* oi = o + i * s.d;
      // Inter-chunk: o_i = γ^(i−c0+1) q_i S (S holds every key before this chunk).
      row_times_matrix(oi, q + i * s.f, state, s.f, s.d);
      if (pw) {
        for (int64_t x = 0; x < s.d; ++x) oi[x] *= pw[i - c0 + 1];
      }
      // Intra-chunk: o_i += Σ_{c0≤j≤i} γ^(i−j) (q_i·k_j) v_j.
      for (int64_t j = c0; j <= i; ++j) {
        const T w = pw ? pw[i - j] : T(1);
        axpy_row(oi, w * dot_row(q + i * s.f, k + j * s.f, s.f), v + j * s.d, s.d);
      }
    }
    advance_key_state(state, k, v, c0, c1, s, pw);
  }
}

// One slice of the causal backward. Inputs as the forward plus g = dO: [N, D].
// Decayed: dq_i = γ^(i−c0+1) g_i Sᵀ + Σ_{c0≤j≤i} γ^(i−j) (g_i·v_j) k_j; the reverse state
// R = Σ_{i≥c1} γ^(i−c1) q_iᵀ g_i gives dk_j = γ^(c1−j) R v_j + Σ_{j≤i<c1} γ^(i−j)(g_i·v_j) q_i
// and dv_j = γ^(c1−j) k_j R + Σ_{j≤i<c1} γ^(i−j)(q_i·k_j) g_i.
template <typename T>
void causal_backward_slice(const T* q, const T* k, const T* v, const T* g, T* dq, T* dk, T* dv,
                           T* state, const AttentionDims& s, int64_t chunk, const T* pw) {
  std::fill(dq, dq + s.n * s.f, T(0));
  std::fill(dk, dk + s.n * s.f, T(0));
  std::fill(dv, dv + s.n * s.d, T(0));
  // Forward sweep for dq.
  std::fill(state, state + s.f * s.d, T(0));
  for (int64_t c0 = 0; c0 < s.n; c0 += chunk) {
    const int64_t c1 = std::min(s.n, c0 + chunk);
    for (int64_t i = c0; i < c1; ++i) {
      T* dqi = dq + i * s.f;
      matrix_times_row(dqi, state, g + i * s.d, s.f, s.d);
      if (pw) {
        for (int64_t x = 0; x < s.f; ++x) dqi[x] *= pw[i - c0 + 1];
      }
      for (int64_t j = c0; j <= i; ++j) {
        const T w = pw ? pw[i - j] : T(1);
        axpy_row(dqi, w * dot_row(g + i * s.d, v + j * s.d, s.d), k + j * s.f, s.f);
      }
    }
    advance_key_state(state, k, v, c0, c1, s, pw);
  }
  // Reverse sweep with R = Σ_{t in later chunks} γ^(t−c1) q_tᵀ g_t: [F, D].
  T* r = state;
  std::fill(r, r + s.f * s.d, T(0));
  const int64_t last = ((s.n - 1) / chunk) * chunk;
  for (int64_t c0 = last; c0 >= 0; c0 -= chunk) {
    const int64_t c1 = std::min(s.n, c0 + chunk);
    for (int64_t j = c0; j < c1; ++j) {
      T* dkj = dk + j * s.f;
      T* dvj = dv + j * s.d;
      matrix_times_row(dkj, r, v + j * s.d, s.f, s.d);
      row_times_matrix(dvj, k + j * s.f, r, s.f, s.d);
      if (pw) {
        for (int64_t x = 0; x < s.f; ++x) dkj[x] *= pw[c1 - j];
        for (int64_t x = 0; x < s.d; ++x) dvj[x] *= pw[c1 - j];
      }
      for (int64_t i = j; i < c1; ++i) {
        const T w = pw ? pw[i - j] : T(1);
        axpy_row(dkj, w * dot_row(g + i * s.d, v + j * s.d, s.d), q + i * s.f, s.f);
        axpy_row(dvj, w * dot_row(q + i * s.f, k + j * s.f, s.f), g + i * s.d, s.d);
      }
    }
    // R = γ^(c1−c0) R + Σ_{c0≤i<c1} γ^(i−c0) q_iᵀ g_i.
    if (pw) {
      for (int64_t x = 0; x < s.f * s.d; ++x) r[x] *= pw[c1 - c0];
    }
    for (int64_t i = c0; i < c1; ++i) {
      if (pw) {
        scaled_outer_accumulate(r, pw[i - c0], q + i * s.f, g + i * s.d, s.f, s.d);
      } else {
        outer_accumulate(r, q + i * s.f, g + i * s.d, s.f, s.d);
      }
    }
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

}  // namespace

Tensor causal_linear_attention_forward(const Tensor& q_in, const Tensor& k_in, const Tensor& v_in,
                                       int64_t chunk_size, const Tensor& decay) {
  const char* op = "causal_linear_attention";
  const AttentionDims s = check_dims(op, q_in, k_in, v_in);
  ROTA_CHECK(chunk_size >= 1, "{}: chunk size must be >= 1, got {}", op, chunk_size);
  const Tensor q = q_in.contiguous();
  const Tensor k = k_in.contiguous();
  const Tensor v = v_in.contiguous();
  Tensor o = Tensor::empty(v.shape(), v.dtype());
  dispatch_floating(q.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    const T* pq = q.data<T>();
    const T* pk = k.data<T>();
    const T* pv = v.data<T>();
    T* po = o.data<T>();
    const std::vector<T> powers = decay_powers<T>(op, decay, q, chunk_size);
    const int64_t heads = powers.empty() ? 1 : q.size(1);
    parallel_for(s.groups, s.n * (s.f + 1) * (s.d + 1), [&](int64_t g0, int64_t g1) {
      std::vector<T> state(s.f * s.d);
      for (int64_t g = g0; g < g1; ++g) {
        const T* pw = powers.empty() ? nullptr : powers.data() + (g % heads) * (chunk_size + 1);
        causal_forward_slice(pq + g * s.n * s.f, pk + g * s.n * s.f, pv + g * s.n * s.d,
                             po + g * s.n * s.d, state.data(), s, chunk_size, pw);
      }
    });
  });
  return o;
}

LinearAttentionGrads causal_linear_attention_backward(const Tensor& q_in, const Tensor& k_in,
                                                      const Tensor& v_in, const Tensor& g_in,
                                                      int64_t chunk_size, const Tensor& decay) {
  const char* op = "causal_linear_attention_backward";
  const AttentionDims s = check_dims(op, q_in, k_in, v_in);
  ROTA_CHECK(g_in.shape() == v_in.shape(), "{}: grad {} for output {}", op, shape_str(g_in.shape()),
             shape_str(v_in.shape()));
  ROTA_CHECK(chunk_size >= 1, "{}: chunk size must be >= 1, got {}", op, chunk_size);
  const Tensor q = q_in.contiguous();
  const Tensor k = k_in.contiguous();
  const Tensor v = v_in.contiguous();
  const Tensor g = g_in.contiguous();
  LinearAttentionGrads grads{empty_like(q), empty_like(k), empty_like(v)};
  dispatch_floating(q.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    const std::vector<T> powers = decay_powers<T>(op, decay, q, chunk_size);
    const int64_t heads = powers.empty() ? 1 : q.size(1);
    parallel_for(s.groups, 2 * s.n * (s.f + 1) * (s.d + 1), [&](int64_t g0, int64_t g1) {
      std::vector<T> state(s.f * s.d);
      for (int64_t gi = g0; gi < g1; ++gi) {
        const T* pw = powers.empty() ? nullptr : powers.data() + (gi % heads) * (chunk_size + 1);
        const int64_t qo = gi * s.n * s.f;
        const int64_t vo = gi * s.n * s.d;
        causal_backward_slice(q.data<T>() + qo, k.data<T>() + qo, v.data<T>() + vo,
                              g.data<T>() + vo, grads.dq.template data<T>() + qo,
                              grads.dk.template data<T>() + qo, grads.dv.template data<T>() + vo,
                              state.data(), s, chunk_size, pw);
      }
    });
  });
  return grads;
}

Tensor causal_linear_attention_quadratic(const Tensor& q_in, const Tensor& k_in,
                                         const Tensor& v_in) {
  const char* op = "causal_linear_attention_quadratic";
  const AttentionDims s = check_dims(op, q_in, k_in, v_in);
  const Tensor q = q_in.contiguous();
  const Tensor k = k_in.contiguous();
  const Tensor v = v_in.contiguous();
  Tensor o = zeros(v.shape(), v.dtype());
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

// Key mask per slice: for q [B, H, N, F] and mask [B, N], slice g uses row g / H.

template <typename T>
std::vector<T> mask_values(const Tensor& key_mask, const Tensor& q, const char* op) {
  std::vector<T> m;
  if (!key_mask.defined()) return m;
  ROTA_CHECK(q.dim() == 4 && key_mask.dim() == 2 && key_mask.size(0) == q.size(0) &&
                 key_mask.size(1) == q.size(2),
             "{}: key mask {} does not fit q {} (expected [B, N] for q [B, H, N, F])", op,
             shape_str(key_mask.shape()), shape_str(q.shape()));
  for (double x : key_mask.to_double_vector()) m.push_back(x != 0 ? T(1) : T(0));
  return m;
}

}  // namespace

Tensor bidirectional_linear_attention_forward(const Tensor& q_in, const Tensor& k_in,
                                              const Tensor& v_in, const Tensor& key_mask) {
  const char* op = "bidirectional_linear_attention";
  const AttentionDims s = check_dims(op, q_in, k_in, v_in);
  const Tensor q = q_in.contiguous();
  const Tensor k = k_in.contiguous();
  const Tensor v = v_in.contiguous();
  Tensor o = Tensor::empty(v.shape(), v.dtype());
  dispatch_floating(q.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    const std::vector<T> mask = mask_values<T>(key_mask, q, op);
    const int64_t heads = mask.empty() ? 1 : q.size(1);
    parallel_for(s.groups, 2 * s.n * s.f * s.d, [&](int64_t g0, int64_t g1) {
      std::vector<T> kv(s.f * s.d);
      for (int64_t gi = g0; gi < g1; ++gi) {
        const T* pq = q.data<T>() + gi * s.n * s.f;
        const T* pk = k.data<T>() + gi * s.n * s.f;
        const T* pv = v.data<T>() + gi * s.n * s.d;
        T* po = o.data<T>() + gi * s.n * s.d;
        const T* m = mask.empty() ? nullptr : mask.data() + (gi / heads) * s.n;
        // KV = Σ_t m_t k_tᵀ v_t : [F, D]
        std::fill(kv.begin(), kv.end(), T(0));
        for (int64_t t = 0; t < s.n; ++t) {
          if (m && m[t] == T(0)) continue;
          outer_accumulate(kv.data(), pk + t * s.f, pv + t * s.d, s.f, s.d);
        }
        // o_t = q_t KV
        std::fill(po, po + s.n * s.d, T(0));
        for (int64_t t = 0; t < s.n; ++t)
          row_times_matrix(po + t * s.d, pq + t * s.f, kv.data(), s.f, s.d);
      }
    });
  });
  return o;
}

LinearAttentionGrads bidirectional_linear_attention_backward(const Tensor& q_in, const Tensor& k_in,
                                                             const Tensor& v_in, const Tensor& g_in,
                                                             const Tensor& key_mask) {
  const char* op = "bidirectional_linear_attention_backward";
  const AttentionDims s = check_dims(op, q_in, k_in, v_in);
  ROTA_CHECK(g_in.shape() == v_in.shape(), "{}: grad {} for output {}", op, shape_str(g_in.shape()),
             shape_str(v_in.shape()));
  const Tensor q = q_in.contiguous();
  const Tensor k = k_in.contiguous();
  const Tensor v = v_in.contiguous();
  const Tensor g = g_in.contiguous();
  LinearAttentionGrads grads{zeros_like(q), zeros_like(k), zeros_like(v)};
  dispatch_floating(q.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    const std::vector<T> mask = mask_values<T>(key_mask, q, op);
    const int64_t heads = mask.empty() ? 1 : q.size(1);
    parallel_for(s.groups, 4 * s.n * s.f * s.d, [&](int64_t g0, int64_t g1) {
      std::vector<T> kv(s.f * s.d);
      std::vector<T> dkv(s.f * s.d);
      for (int64_t gi = g0; gi < g1; ++gi) {
        const int64_t qo = gi * s.n * s.f;
        const int64_t vo = gi * s.n * s.d;
        const T* pq = q.data<T>() + qo;
        const T* pk = k.data<T>() + qo;
        const T* pv = v.data<T>() + vo;
        const T* pg = g.data<T>() + vo;
        T* dq = grads.dq.template data<T>() + qo;
        T* dk = grads.dk.template data<T>() + qo;
        T* dv = grads.dv.template data<T>() + vo;
        const T* m = mask.empty() ? nullptr : mask.data() + (gi / heads) * s.n;
        std::fill(kv.begin(), kv.end(), T(0));
        std::fill(dkv.begin(), dkv.end(), T(0));
        for (int64_t t = 0; t < s.n; ++t) {
          if (!m || m[t] != T(0)) outer_accumulate(kv.data(), pk + t * s.f, pv + t * s.d, s.f, s.d);
          outer_accumulate(dkv.data(), pq + t * s.f, pg + t * s.d, s.f, s.d);  // dKV = Qᵀ dO
        }
        for (int64_t t = 0; t < s.n; ++t) {
          matrix_times_row(dq + t * s.f, kv.data(), pg + t * s.d, s.f, s.d);  // dO KVᵀ
          if (m && m[t] == T(0)) continue;  // padded keys get no gradient
          matrix_times_row(dk + t * s.f, dkv.data(), pv + t * s.d, s.f, s.d);  // V dKVᵀ
          row_times_matrix(dv + t * s.d, pk + t * s.f, dkv.data(), s.f, s.d);  // K dKV
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
  const Tensor q = q_in.contiguous();
  const Tensor k = k_in.contiguous();
  const Tensor v = v_in.contiguous();
  Tensor o = zeros(v.shape(), v.dtype());
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
