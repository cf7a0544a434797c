// Vectorised one-row loops the fused attention kernels share: out += a·x, dot products, sums, exp.
#pragma once

#include <cmath>
#include <cstdint>

#include "framework/backend/cpu/vector_math.h"

namespace rota::backend {

/// out[n] += a · x[n]
template <typename T>
inline void axpy_row(T* out, T a, const T* x, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) out[i] += a * x[i];
}

/// Σ_{i<n} term(i) in kLanes fixed partial sums (then the tail): a fixed-width inner loop every
/// build vectorises, also where an omp simd reduction is left scalar (inlined into a flattened
/// instruction-set build, isa_build.h). The order of the sums is fixed, so the result is
/// deterministic for a given build.
template <int64_t kLanes, typename T, typename Term>
inline T lane_sum(int64_t n, Term term) {
  T lanes[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int64_t l = 0; l < kLanes; ++l) lanes[l] += term(i + l);
  }
  T acc = 0;
  for (int64_t l = 0; l < kLanes; ++l) acc += lanes[l];
  for (; i < n; ++i) acc += term(i);
  return acc;
}

/// Σ_i a[i]·b[i] over [n] (lane_sum, 16 lanes).
template <typename T>
inline T dot_row(const T* a, const T* b, int64_t n) {
  return lane_sum<16, T>(n, [&](int64_t i) { return a[i] * b[i]; });
}

/// x[i] = e^x[i] over [n]: vecmath's vector f32 exp (the build for the widest instruction set),
/// std::exp in f64.
inline void exp_inplace(float* x, int64_t n) {
  if (n > 0) vecmath::kernels().exp(x, x, n);
}
inline void exp_inplace(double* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = std::exp(x[i]);
}

/// Σ_i x[i] over [n] in f64 (lane_sum, 8 lanes).
inline double sum_row(const double* x, int64_t n) {
  return lane_sum<8, double>(n, [&](int64_t i) { return x[i]; });
}

/// Σ_i a[i]·b[i]·w[i] over [n] (lane_sum, 16 lanes).
template <typename T>
inline T weighted_dot_row(const T* a, const T* b, const T* w, int64_t n) {
  return lane_sum<16, T>(n, [&](int64_t i) { return a[i] * b[i] * w[i]; });
}

}  // namespace rota::backend
