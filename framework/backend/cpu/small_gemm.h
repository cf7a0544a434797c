// Cache-resident matrix products for kernels that work block by block (the chunked linear
// attention): register-blocked f32 micro-kernels for AVX-512 and AVX2+FMA, picked at run time,
// and a portable loop (also the f64 path).
#pragma once

#include <cstdint>

#include "framework/backend/cpu/vector_math.h"

namespace rota::backend::small_gemm {

using vecmath::Isa;

/// One product C = A·B (or C += A·B with accumulate):
///   A: [M, K], element (i, p) at a[i·a_row_stride + p·a_col_stride] — any layout, so Aᵀ of a
///      row-major matrix is read in place (a_row_stride = 1, a_col_stride = its row length);
///   B: [K, N], rows of N contiguous elements, row p at b + p·ldb;
///   C: [M, N], row i at c + i·ldc.
/// C must not overlap A or B. Sums run over p in increasing order in blocks, so results are
/// deterministic for given sizes and instruction set (not bit-equal across instruction sets:
/// the vector builds use FMA).
template <typename T>
struct GemmArgs {
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  const T* a = nullptr;
  int64_t a_row_stride = 0;
  int64_t a_col_stride = 1;
  const T* b = nullptr;
  int64_t ldb = 0;
  T* c = nullptr;
  int64_t ldc = 0;
  bool accumulate = false;
};

/// f32 product with the build for isa (which must be supported: tests call each one).
void gemm(const GemmArgs<float>& args, Isa isa);
/// f32 product with the widest build this CPU runs (vecmath::best_isa()).
void gemm(const GemmArgs<float>& args);
/// f64 product (portable loop; the gradient checks run on it).
void gemm(const GemmArgs<double>& args);

/// C[M, N] (+)= A[M, K]·B[K, N] with the widest build (f32) or the portable loop (f64): A element
/// (i, p) at a[i·ars + p·acs], B and C row-major with leading dims ldb, ldc. An empty product
/// (M or N = 0) touches nothing; K = 0 zeroes C unless accumulating. The block products of the
/// chunked attention kernels.
template <typename T>
inline void block_product(int64_t m, int64_t n, int64_t k, const T* a, int64_t ars, int64_t acs,
                          const T* b, int64_t ldb, T* c, int64_t ldc, bool accumulate) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    if (!accumulate) {
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = T(0);
      }
    }
    return;
  }
  GemmArgs<T> args;
  args.m = m;
  args.n = n;
  args.k = k;
  args.a = a;
  args.a_row_stride = ars;
  args.a_col_stride = acs;
  args.b = b;
  args.ldb = ldb;
  args.c = c;
  args.ldc = ldc;
  args.accumulate = accumulate;
  gemm(args);
}

/// dst[cols, rows] = src[rows, cols]ᵀ; src row i at src + i·ld_src, dst rows dense (ld = rows).
/// The plain element loop (f64, and the portable build of the f32 one).
template <typename T>
void transpose_into(const T* src, int64_t rows, int64_t cols, int64_t ld_src, T* dst) {
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) dst[j * rows + i] = src[i * ld_src + j];
  }
}

/// The f32 transpose with the build for isa: AVX2 and AVX-512 move 8×8 blocks through
/// registers (unpack/shuffle/permute), the edges element by element; a copy, so every build
/// gives the same result. dst must not overlap src.
void transpose_into(const float* src, int64_t rows, int64_t cols, int64_t ld_src, float* dst,
                    Isa isa);
/// The f32 transpose with the widest build this CPU runs (vecmath::best_isa()).
void transpose_into(const float* src, int64_t rows, int64_t cols, int64_t ld_src, float* dst);

}  // namespace rota::backend::small_gemm
