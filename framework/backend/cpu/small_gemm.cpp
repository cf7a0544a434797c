// The products of small_gemm.h: a register tile of C rows × vector columns held in registers
// while p runs over a block of K, one build per instruction set.
#include "framework/backend/cpu/small_gemm.h"

#include <algorithm>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "framework/base/error.h"

namespace rota::backend::small_gemm {

namespace {

// K is walked in blocks so the B panel a tile streams ([kBlockK, tile columns]) stays in L1/L2
// even when K is a whole sequence (the bidirectional kernels).
constexpr int64_t kBlockK = 256;

template <typename T>
void check_args(const GemmArgs<T>& g) {
  ROTA_CHECK(g.m >= 0 && g.n >= 0 && g.k >= 0 && g.ldb >= g.n && g.ldc >= g.n,
             "small_gemm: bad sizes m={} n={} k={} ldb={} ldc={}", g.m, g.n, g.k, g.ldb, g.ldc);
}

// C[M, N] (+)= A[M, K]·B[K, N], the plain loop: row i of C gets Σ_p a(i, p)·B[p, :].
template <typename T>
void portable_gemm(const GemmArgs<T>& g) {
  for (int64_t i = 0; i < g.m; ++i) {
    T* c = g.c + i * g.ldc;
    if (!g.accumulate) std::fill(c, c + g.n, T(0));
    const T* a = g.a + i * g.a_row_stride;
    for (int64_t p = 0; p < g.k; ++p) {
      const T api = a[p * g.a_col_stride];
      const T* b = g.b + p * g.ldb;
#pragma omp simd
      for (int64_t j = 0; j < g.n; ++j) c[j] += api * b[j];
    }
  }
}

#if defined(__x86_64__)

// ---- AVX-512: tiles of up to 6 rows × 4 vectors of 16 floats (24 accumulators) ----

// C[rows, cols] (+)= A[rows, kb]·B[kb, cols] for one tile; cols ≤ 16·kVecs, the last vector
// masked by `tail`.
template <int kRows, int kVecs>
[[gnu::target("avx512f,fma")]] void avx512_tile(const float* a, int64_t ars, int64_t acs,
                                                const float* b, int64_t ldb, float* c, int64_t ldc,
                                                int64_t kb, __mmask16 tail, bool accumulate) {
  __m512 acc[kRows][kVecs];
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm512_setzero_ps();
  }
  for (int64_t p = 0; p < kb; ++p) {
    __m512 bv[kVecs];
#pragma GCC unroll 4
    for (int v = 0; v < kVecs; ++v) {
      bv[v] = v + 1 < kVecs ? _mm512_loadu_ps(b + 16 * v) : _mm512_maskz_loadu_ps(tail, b + 16 * v);
    }
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) {
      const __m512 av = _mm512_set1_ps(a[r * ars]);
#pragma GCC unroll 4
      for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm512_fmadd_ps(av, bv[v], acc[r][v]);
    }
    a += acs;
    b += ldb;
  }
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < kVecs; ++v) {
      float* cp = c + r * ldc + 16 * v;
      const __mmask16 mask = v + 1 < kVecs ? __mmask16(0xffff) : tail;
      __m512 out = acc[r][v];
      if (accumulate) out = _mm512_add_ps(out, _mm512_maskz_loadu_ps(mask, cp));
      _mm512_mask_storeu_ps(cp, mask, out);
    }
  }
}

using Avx512Tile = void (*)(const float*, int64_t, int64_t, const float*, int64_t, float*, int64_t,
                            int64_t, __mmask16, bool);

template <int kRows>
constexpr Avx512Tile avx512_tile_for(int vecs) {
  return vecs == 1   ? avx512_tile<kRows, 1>
         : vecs == 2 ? avx512_tile<kRows, 2>
         : vecs == 3 ? avx512_tile<kRows, 3>
                     : avx512_tile<kRows, 4>;
}

Avx512Tile avx512_tile_for(int rows, int vecs) {
  switch (rows) {
    case 1:
      return avx512_tile_for<1>(vecs);
    case 2:
      return avx512_tile_for<2>(vecs);
    case 3:
      return avx512_tile_for<3>(vecs);
    case 4:
      return avx512_tile_for<4>(vecs);
    case 5:
      return avx512_tile_for<5>(vecs);
    default:
      return avx512_tile_for<6>(vecs);
  }
}

void avx512_gemm(const GemmArgs<float>& g) {
  constexpr int64_t kTileRows = 6;
  constexpr int64_t kTileCols = 64;
  for (int64_t p0 = 0; p0 < g.k || (p0 == 0 && !g.accumulate); p0 += kBlockK) {
    const int64_t kb = std::min(kBlockK, g.k - p0);
    const bool accumulate = g.accumulate || p0 > 0;
    for (int64_t j0 = 0; j0 < g.n; j0 += kTileCols) {
      const int64_t cols = std::min(kTileCols, g.n - j0);
      const int vecs = static_cast<int>((cols + 15) / 16);
      const int last = static_cast<int>(cols - 16 * (vecs - 1));
      const __mmask16 tail = static_cast<__mmask16>((1u << last) - 1u);
      for (int64_t i0 = 0; i0 < g.m; i0 += kTileRows) {
        const int rows = static_cast<int>(std::min(kTileRows, g.m - i0));
        avx512_tile_for(rows, vecs)(g.a + i0 * g.a_row_stride + p0 * g.a_col_stride, g.a_row_stride,
                                    g.a_col_stride, g.b + p0 * g.ldb + j0, g.ldb,
                                    g.c + i0 * g.ldc + j0, g.ldc, kb, tail, accumulate);
      }
    }
    if (g.k == 0) break;
  }
}

// ---- AVX2 + FMA: tiles of up to 6 rows × 2 vectors of 8 floats (12 accumulators) ----

// kTail: the final vector is partial (lanes < last live), read and written through masks; full
// vectors use plain loads and stores (AMD's masked moves are several times slower, the masked
// store above all).
template <int kRows, int kVecs, bool kTail>
[[gnu::target("avx2,fma")]] void avx2_tile(const float* a, int64_t ars, int64_t acs, const float* b,
                                           int64_t ldb, float* c, int64_t ldc, int64_t kb, int last,
                                           bool accumulate) {
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i tail = _mm256_cmpgt_epi32(_mm256_set1_epi32(last), lane);
  // Whether vector v is read and written through the tail mask.
  constexpr auto masked = [](int v) { return kTail && v + 1 == kVecs; };
  __m256 acc[kRows][kVecs];
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 2
    for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm256_setzero_ps();
  }
  for (int64_t p = 0; p < kb; ++p) {
    __m256 bv[kVecs];
#pragma GCC unroll 2
    for (int v = 0; v < kVecs; ++v)
      bv[v] = masked(v) ? _mm256_maskload_ps(b + 8 * v, tail) : _mm256_loadu_ps(b + 8 * v);
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) {
      const __m256 av = _mm256_broadcast_ss(a + r * ars);
#pragma GCC unroll 2
      for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm256_fmadd_ps(av, bv[v], acc[r][v]);
    }
    a += acs;
    b += ldb;
  }
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 2
    for (int v = 0; v < kVecs; ++v) {
      float* cp = c + r * ldc + 8 * v;
      __m256 out = acc[r][v];
      if (masked(v)) {
        if (accumulate) out = _mm256_add_ps(out, _mm256_maskload_ps(cp, tail));
        _mm256_maskstore_ps(cp, tail, out);
      } else {
        if (accumulate) out = _mm256_add_ps(out, _mm256_loadu_ps(cp));
        _mm256_storeu_ps(cp, out);
      }
    }
  }
}

using Avx2Tile = void (*)(const float*, int64_t, int64_t, const float*, int64_t, float*, int64_t,
                          int64_t, int, bool);

template <int kRows>
constexpr Avx2Tile avx2_tile_for(int vecs, bool partial) {
  if (partial) return vecs == 1 ? avx2_tile<kRows, 1, true> : avx2_tile<kRows, 2, true>;
  return vecs == 1 ? avx2_tile<kRows, 1, false> : avx2_tile<kRows, 2, false>;
}

// partial: the last of the vecs vectors is not full.
Avx2Tile avx2_tile_for(int rows, int vecs, bool partial) {
  switch (rows) {
    case 1:
      return avx2_tile_for<1>(vecs, partial);
    case 2:
      return avx2_tile_for<2>(vecs, partial);
    case 3:
      return avx2_tile_for<3>(vecs, partial);
    case 4:
      return avx2_tile_for<4>(vecs, partial);
    case 5:
      return avx2_tile_for<5>(vecs, partial);
    default:
      return avx2_tile_for<6>(vecs, partial);
  }
}

void avx2_gemm(const GemmArgs<float>& g) {
  constexpr int64_t kTileRows = 6;
  constexpr int64_t kTileCols = 16;
  for (int64_t p0 = 0; p0 < g.k || (p0 == 0 && !g.accumulate); p0 += kBlockK) {
    const int64_t kb = std::min(kBlockK, g.k - p0);
    const bool accumulate = g.accumulate || p0 > 0;
    for (int64_t j0 = 0; j0 < g.n; j0 += kTileCols) {
      const int64_t cols = std::min(kTileCols, g.n - j0);
      const int vecs = static_cast<int>((cols + 7) / 8);
      const int last = static_cast<int>(cols - 8 * (vecs - 1));
      for (int64_t i0 = 0; i0 < g.m; i0 += kTileRows) {
        const int rows = static_cast<int>(std::min(kTileRows, g.m - i0));
        avx2_tile_for(rows, vecs, last < 8)(
            g.a + i0 * g.a_row_stride + p0 * g.a_col_stride, g.a_row_stride, g.a_col_stride,
            g.b + p0 * g.ldb + j0, g.ldb, g.c + i0 * g.ldc + j0, g.ldc, kb, last, accumulate);
      }
    }
    if (g.k == 0) break;
  }
}

#endif  // __x86_64__

void run_gemm(const GemmArgs<float>& args, Isa isa) {
  check_args(args);
  if (args.m == 0 || args.n == 0) return;
#if defined(__x86_64__)
  if (isa == Isa::kAvx512) return avx512_gemm(args);
  if (isa == Isa::kAvx2) return avx2_gemm(args);
#endif
  portable_gemm(args);
}

#if defined(__x86_64__)
// dst[cols, rows] = src[rows, cols]ᵀ in 8×8 blocks: 8 source rows are loaded, interleaved
// pairwise (unpack), in fours (shuffle) and across the 128-bit halves (permute), giving 8
// destination rows; the edges that do not fill a block are copied element by element.
[[gnu::target("avx2,fma")]] void avx2_transpose(const float* src, int64_t rows, int64_t cols,
                                                int64_t ld_src, float* dst) {
  const int64_t rows8 = rows - rows % 8, cols8 = cols - cols % 8;
  for (int64_t i = 0; i < rows8; i += 8) {
    for (int64_t j = 0; j < cols8; j += 8) {
      const float* s0 = src + i * ld_src + j;
      __m256 r[8];
      for (int x = 0; x < 8; ++x) r[x] = _mm256_loadu_ps(s0 + x * ld_src);
      __m256 t[8];
      for (int x = 0; x < 4; ++x) {
        t[2 * x] = _mm256_unpacklo_ps(r[2 * x], r[2 * x + 1]);
        t[2 * x + 1] = _mm256_unpackhi_ps(r[2 * x], r[2 * x + 1]);
      }
      __m256 u[8];
      for (int x = 0; x < 2; ++x) {
        const int o = 4 * x;
        u[o + 0] = _mm256_shuffle_ps(t[o + 0], t[o + 2], 0x44);
        u[o + 1] = _mm256_shuffle_ps(t[o + 0], t[o + 2], 0xEE);
        u[o + 2] = _mm256_shuffle_ps(t[o + 1], t[o + 3], 0x44);
        u[o + 3] = _mm256_shuffle_ps(t[o + 1], t[o + 3], 0xEE);
      }
      float* d0 = dst + j * rows + i;
      for (int x = 0; x < 4; ++x) {
        _mm256_storeu_ps(d0 + x * rows, _mm256_permute2f128_ps(u[x], u[x + 4], 0x20));
        _mm256_storeu_ps(d0 + (x + 4) * rows, _mm256_permute2f128_ps(u[x], u[x + 4], 0x31));
      }
    }
  }
  for (int64_t i = 0; i < rows; ++i) {  // right edge of the blocked rows, then the bottom rows
    for (int64_t j = i < rows8 ? cols8 : 0; j < cols; ++j) dst[j * rows + i] = src[i * ld_src + j];
  }
}
#endif

void run_transpose(const float* src, int64_t rows, int64_t cols, int64_t ld_src, float* dst,
                   Isa isa) {
#if defined(__x86_64__)
  if (isa != Isa::kPortable) return avx2_transpose(src, rows, cols, ld_src, dst);
#endif
  transpose_into<float>(src, rows, cols, ld_src, dst);
}

}  // namespace

void transpose_into(const float* src, int64_t rows, int64_t cols, int64_t ld_src, float* dst,
                    Isa isa) {
  ROTA_CHECK(vecmath::isa_supported(isa), "small_gemm: this CPU cannot run the {} build",
             vecmath::isa_name(isa));
  run_transpose(src, rows, cols, ld_src, dst, isa);
}

void transpose_into(const float* src, int64_t rows, int64_t cols, int64_t ld_src, float* dst) {
  static const Isa chosen = vecmath::best_isa();
  run_transpose(src, rows, cols, ld_src, dst, chosen);
}

void gemm(const GemmArgs<float>& args, Isa isa) {
  ROTA_CHECK(vecmath::isa_supported(isa), "small_gemm: this CPU cannot run the {} build",
             vecmath::isa_name(isa));
  run_gemm(args, isa);
}

void gemm(const GemmArgs<float>& args) {
  static const Isa chosen = vecmath::best_isa();
  run_gemm(args, chosen);
}

void gemm(const GemmArgs<double>& args) {
  check_args(args);
  portable_gemm(args);
}

}  // namespace rota::backend::small_gemm
