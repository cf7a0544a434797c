// Vectorised one-row loops the fused attention kernels share: out += a·x and the dot product.
#pragma once

#include <cstdint>

namespace rota::backend {

/// out[n] += a · x[n]
template <typename T>
inline void axpy_row(T* out, T a, const T* x, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) out[i] += a * x[i];
}

/// Σ_i a[i]·b[i] over [n] (an omp simd reduction: one partial sum per vector lane).
template <typename T>
inline T dot_row(const T* a, const T* b, int64_t n) {
  T acc = 0;
#pragma omp simd reduction(+ : acc)
  for (int64_t i = 0; i < n; ++i) acc += a[i] * b[i];
  return acc;
}

}  // namespace rota::backend
