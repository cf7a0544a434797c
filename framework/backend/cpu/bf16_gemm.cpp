// The products of bf16_gemm.h: operands rounded and packed into bf16 pairs (the layout both
// AMX and VDPBF16PS read), then tile or register-blocked products into f32.
#include "framework/backend/cpu/bf16_gemm.h"

#include <algorithm>
#include <cstring>
#include <vector>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "framework/base/error.h"
#include "framework/tensor/dtype.h"

namespace rota::backend::small_gemm {

namespace {

int64_t round_up(int64_t x, int64_t multiple) {
  return (x + multiple - 1) / multiple * multiple;
}

// x rounded to the nearest even bf16 (float_to_bf16), as a float (exact) or as its 16 bits.
inline float rounded(float x) {
  return bf16_to_float(float_to_bf16(x));
}
inline uint32_t bf16_bits(float x) {
  return float_to_bf16(x).bits;
}

void check_args(const GemmArgs<float>& g) {
  ROTA_CHECK(g.m >= 0 && g.n >= 0 && g.k >= 0 && g.ldb >= g.n && g.ldc >= g.n,
             "gemm_bf16: bad sizes m={} n={} k={} ldb={} ldc={}", g.m, g.n, g.k, g.ldb, g.ldc);
}

// ---- kEmulated: the rounded operands through the f32 micro-kernels ----

void emulated_gemm(const GemmArgs<float>& g) {
  thread_local std::vector<float> a_rounded, b_rounded;
  a_rounded.resize(static_cast<size_t>(g.m * g.k));  // [M, K] row-major
  b_rounded.resize(static_cast<size_t>(g.k * g.n));  // [K, N]
  for (int64_t i = 0; i < g.m; ++i) {
    for (int64_t p = 0; p < g.k; ++p) {
      a_rounded[i * g.k + p] = rounded(g.a[i * g.a_row_stride + p * g.a_col_stride]);
    }
  }
  for (int64_t p = 0; p < g.k; ++p) {
    for (int64_t j = 0; j < g.n; ++j) b_rounded[p * g.n + j] = rounded(g.b[p * g.ldb + j]);
  }
  GemmArgs<float> rounded = g;
  rounded.a = a_rounded.data();
  rounded.a_row_stride = g.k;
  rounded.a_col_stride = 1;
  rounded.b = b_rounded.data();
  rounded.ldb = g.n;
  gemm(rounded);
}

#if defined(__x86_64__)

// ---- packing: bf16 pairs, one 32-bit word per pair (low half first), zero padded ----
//
// Packed A: [Mp, Kp/2] words, word (i, p/2) = bf16(a(i, p)) | bf16(a(i, p+1)) << 16 (the rows
// of an AMX A tile; a broadcast operand of VDPBF16PS).
// Packed B: [Kp/2, Np] words, word (p/2, j) = bf16(b(p, j)) | bf16(b(p+1, j)) << 16 (the rows of
// an AMX B tile, "VNNI" layout; a vector operand of VDPBF16PS).
// Mp, Np: multiples of 32; Kp: a multiple of 32. Padding is zero, which adds nothing.

constexpr int64_t kPad = 32;

// 16 lanes of 32 bits, with the vector extension's operators (GCC 12's shift and set1
// intrinsics trip a false -Wmaybe-uninitialized inside target-attribute functions).
using Lanes = uint32_t __attribute__((vector_size(64)));

// The bf16 bits of 16 floats, one per 32-bit lane (float_to_bf16's rule, vectorised).
[[gnu::target("avx512f,avx512bw")]] inline Lanes round16(__m512 x) {
  const Lanes u = reinterpret_cast<Lanes>(x);
  const Lanes rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const Lanes quiet = (u >> 16) | 0x40u;
  const Lanes nan = reinterpret_cast<Lanes>((u & 0x7fffffffu) > 0x7f800000u);  // all ones or 0
  return (quiet & nan) | (rounded & ~nan);
}

inline __mmask16 tail_mask(int64_t count) {
  return count >= 16 ? __mmask16(0xffff) : static_cast<__mmask16>((1u << count) - 1u);
}

// dst[r2, j] for r2 < rows2, j < cols_padded: the pair of source rows 2·r2, 2·r2 + 1 (rows at
// src + r·ld, `rows` of them, `cols` floats each), zero beyond. dst rows have ld_dst words.
[[gnu::target("avx512f,avx512bw")]] void pack_row_pairs(const float* src, int64_t ld, int64_t rows,
                                                        int64_t cols, int64_t rows2,
                                                        int64_t cols_padded, uint32_t* dst,
                                                        int64_t ld_dst) {
  for (int64_t r2 = 0; r2 < rows2; ++r2) {
    uint32_t* out = dst + r2 * ld_dst;
    const float* row0 = 2 * r2 < rows ? src + 2 * r2 * ld : nullptr;
    const float* row1 = 2 * r2 + 1 < rows ? src + (2 * r2 + 1) * ld : nullptr;
    for (int64_t j = 0; j < cols_padded; j += 16) {
      const __mmask16 m = j < cols ? tail_mask(cols - j) : __mmask16(0);
      const Lanes zero = {};
      const Lanes low = row0 ? round16(_mm512_maskz_loadu_ps(m, row0 + j)) : zero;
      const Lanes high = row1 ? round16(_mm512_maskz_loadu_ps(m, row1 + j)) : zero;
      const Lanes words = low | (high << 16);
      std::memcpy(out + j, &words, sizeof words);
    }
  }
}

// dst[i, ·] for i < rows_padded: row i of src (`cols` floats at src + i·ld) as bf16, 2 per word,
// zero padded to cols_padded (a multiple of 32) and beyond `rows`.
[[gnu::target("avx512f,avx512bw")]] void pack_rows(const float* src, int64_t ld, int64_t rows,
                                                   int64_t cols, int64_t rows_padded,
                                                   int64_t cols_padded, uint32_t* dst) {
  const int64_t words = cols_padded / 2;
  for (int64_t i = 0; i < rows_padded; ++i) {
    uint32_t* out = dst + i * words;
    if (i >= rows) {
      std::memset(out, 0, static_cast<size_t>(words) * sizeof(uint32_t));
      continue;
    }
    const float* row = src + i * ld;
    for (int64_t p = 0; p < cols_padded; p += 32) {
      const __mmask16 m0 = p < cols ? tail_mask(cols - p) : __mmask16(0);
      const __mmask16 m1 = p + 16 < cols ? tail_mask(cols - p - 16) : __mmask16(0);
      // 16 lanes of 32 bits narrowed to 16 × 16 bits each (maskz: the unmasked form trips
      // GCC 12's false warning, see Lanes)
      const __m256i lo = _mm512_maskz_cvtepi32_epi16(
          0xffff, reinterpret_cast<__m512i>(round16(_mm512_maskz_loadu_ps(m0, row + p))));
      const __m256i hi = _mm512_maskz_cvtepi32_epi16(
          0xffff, reinterpret_cast<__m512i>(round16(_mm512_maskz_loadu_ps(m1, row + p + 16))));
      std::memcpy(out + p / 2, &lo, sizeof lo);
      std::memcpy(out + p / 2 + 8, &hi, sizeof hi);
    }
  }
}

struct Packed {
  int64_t mp = 0, np = 0, kp = 0;
  const uint32_t* a = nullptr;  // [mp, kp/2]
  const uint32_t* b = nullptr;  // [kp/2, np]
};

Packed pack_operands(const GemmArgs<float>& g) {
  thread_local std::vector<uint32_t> a_words, b_words, staging;
  Packed p;
  p.mp = round_up(g.m, kPad);
  p.np = round_up(g.n, kPad);
  p.kp = round_up(g.k, kPad);
  const int64_t k2 = p.kp / 2;
  a_words.resize(static_cast<size_t>(p.mp * k2));
  b_words.resize(static_cast<size_t>(k2 * p.np));
  pack_row_pairs(g.b, g.ldb, g.k, g.n, k2, p.np, b_words.data(), p.np);
  if (g.a_col_stride == 1) {
    pack_rows(g.a, g.a_row_stride, g.m, g.k, p.mp, p.kp, a_words.data());
  } else if (g.a_row_stride == 1) {
    // A read transposed: its columns p are contiguous rows of the source. Pair them ([Kp/2, Mp]
    // words), then transpose the words (a copy of bits through the f32 transpose).
    staging.resize(static_cast<size_t>(k2 * p.mp));
    pack_row_pairs(g.a, g.a_col_stride, g.k, g.m, k2, p.mp, staging.data(), p.mp);
    transpose_into(reinterpret_cast<const float*>(staging.data()), k2, p.mp, p.mp,
                   reinterpret_cast<float*>(a_words.data()));
  } else {
    for (int64_t i = 0; i < p.mp; ++i) {
      for (int64_t q = 0; q < k2; ++q) {
        uint32_t word = 0;
        if (i < g.m) {
          const float* a = g.a + i * g.a_row_stride;
          if (2 * q < g.k) word |= bf16_bits(a[2 * q * g.a_col_stride]);
          if (2 * q + 1 < g.k) word |= bf16_bits(a[(2 * q + 1) * g.a_col_stride]) << 16;
        }
        a_words[i * k2 + q] = word;
      }
    }
  }
  p.a = a_words.data();
  p.b = b_words.data();
  return p;
}

// c[i, 0..n) (+)= sums[i, 0..n) for i < m.
[[gnu::target("avx512f")]] void write_out(const float* sums, int64_t ld_sums,
                                          const GemmArgs<float>& g) {
  for (int64_t i = 0; i < g.m; ++i) {
    const float* s = sums + i * ld_sums;
    float* c = g.c + i * g.ldc;
    for (int64_t j = 0; j < g.n; j += 16) {
      const __mmask16 m = tail_mask(g.n - j);
      __m512 v = _mm512_maskz_loadu_ps(m, s + j);
      if (g.accumulate) v = _mm512_add_ps(_mm512_maskz_loadu_ps(m, c + j), v);
      _mm512_mask_storeu_ps(c + j, m, v);
    }
  }
}

// ---- kAvx512Bf16: 4 rows × kVecs vectors of 16 columns held in registers ----

template <int kVecs>
[[gnu::target("avx512f,avx512bw,avx512bf16")]] void dpbf16_tile(const Packed& p, int64_t i0,
                                                                int64_t j0, float* sums) {
  constexpr int kRows = 4;
  const int64_t k2 = p.kp / 2;
  __m512 acc[kRows][kVecs];
  for (int r = 0; r < kRows; ++r) {
    for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm512_setzero_ps();
  }
  const uint32_t* a = p.a + i0 * k2;
  for (int64_t q = 0; q < k2; ++q) {
    __m512bh b[kVecs];
    for (int v = 0; v < kVecs; ++v) {
      b[v] = reinterpret_cast<__m512bh>(_mm512_loadu_si512(p.b + q * p.np + j0 + 16 * v));
    }
    for (int r = 0; r < kRows; ++r) {
      const Lanes word = Lanes{} + a[r * k2 + q];  // broadcast
      const __m512bh x = reinterpret_cast<__m512bh>(word);
      for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm512_dpbf16_ps(acc[r][v], x, b[v]);
    }
  }
  for (int r = 0; r < kRows; ++r) {
    for (int v = 0; v < kVecs; ++v)
      _mm512_storeu_ps(sums + (i0 + r) * p.np + j0 + 16 * v, acc[r][v]);
  }
}

void dpbf16_gemm(const GemmArgs<float>& g) {
  const Packed p = pack_operands(g);
  thread_local std::vector<float> sums;
  sums.resize(static_cast<size_t>(p.mp * p.np));
  const int64_t rows = round_up(g.m, 4);
  for (int64_t j0 = 0; j0 < p.np; j0 += 64) {
    for (int64_t i0 = 0; i0 < rows; i0 += 4) {
      if (p.np - j0 >= 64) {
        dpbf16_tile<4>(p, i0, j0, sums.data());
      } else {
        dpbf16_tile<2>(p, i0, j0, sums.data());  // np is a multiple of 32
      }
    }
  }
  write_out(sums.data(), p.np, g);
}

// ---- kAmx: 32 × 32 blocks of C as four 16 × 16 f32 tiles ----

struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t bytes_per_row[16] = {};
  uint8_t rows[16] = {};
};

// Tiles 0-3: C blocks [16, 16] f32; 4, 5: A [16 rows, 32 bf16]; 6, 7: B [16 pair rows, 16 × 2
// bf16]. Every tile is 16 rows of 64 bytes.
[[gnu::target("amx-tile,amx-bf16")]] void amx_blocks(const Packed& p, float* sums) {
  TileConfig config;
  for (int t = 0; t < 8; ++t) {
    config.rows[t] = 16;
    config.bytes_per_row[t] = 64;
  }
  _tile_loadconfig(&config);  // every call: oneDNN's kernels configure the tiles their own way
  const int64_t k2 = p.kp / 2;
  const int64_t a_stride = k2 * 4, b_stride = p.np * 4, c_stride = p.np * 4;
  for (int64_t i0 = 0; i0 < p.mp; i0 += 32) {
    for (int64_t j0 = 0; j0 < p.np; j0 += 32) {
      _tile_zero(0);
      _tile_zero(1);
      _tile_zero(2);
      _tile_zero(3);
      for (int64_t q = 0; q < k2; q += 16) {
        _tile_loadd(4, p.a + i0 * k2 + q, a_stride);
        _tile_loadd(5, p.a + (i0 + 16) * k2 + q, a_stride);
        _tile_loadd(6, p.b + q * p.np + j0, b_stride);
        _tile_loadd(7, p.b + q * p.np + j0 + 16, b_stride);
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
      }
      float* c = sums + i0 * p.np + j0;
      _tile_stored(0, c, c_stride);
      _tile_stored(1, c + 16, c_stride);
      _tile_stored(2, c + 16 * p.np, c_stride);
      _tile_stored(3, c + 16 * p.np + 16, c_stride);
    }
  }
  _tile_release();
}

void amx_gemm(const GemmArgs<float>& g) {
  const Packed p = pack_operands(g);
  thread_local std::vector<float> sums;
  sums.resize(static_cast<size_t>(p.mp * p.np));
  amx_blocks(p, sums.data());
  write_out(sums.data(), p.np, g);
}

bool cpu_has_avx512_bf16() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx)) return false;
  return (eax & (1u << 5)) != 0 && __builtin_cpu_supports("avx512f") &&
         __builtin_cpu_supports("avx512bw");
}

bool cpu_has_amx_bf16() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
  const bool tile = (edx & (1u << 24)) != 0, bf16 = (edx & (1u << 22)) != 0;
  if (!tile || !bf16 || !cpu_has_avx512_bf16()) return false;  // packing uses AVX-512
  // Linux keeps the tile data state off until the process asks for it (5.16 and later).
  constexpr long kArchRequestXcompPerm = 0x1023;
  constexpr long kXfeatureTileData = 18;
  return syscall(SYS_arch_prctl, kArchRequestXcompPerm, kXfeatureTileData) == 0;
}

#endif  // __x86_64__

void run_gemm_bf16(const GemmArgs<float>& g, Bf16Unit unit) {
  check_args(g);
  if (g.m == 0 || g.n == 0) return;
  if (g.k == 0) {
    if (!g.accumulate) {
      for (int64_t i = 0; i < g.m; ++i) std::fill(g.c + i * g.ldc, g.c + i * g.ldc + g.n, 0.0f);
    }
    return;
  }
#if defined(__x86_64__)
  if (unit == Bf16Unit::kAmx) return amx_gemm(g);
  if (unit == Bf16Unit::kAvx512Bf16) return dpbf16_gemm(g);
#endif
  emulated_gemm(g);
}

}  // namespace

const char* bf16_unit_name(Bf16Unit unit) {
  switch (unit) {
    case Bf16Unit::kEmulated:
      return "emulated";
    case Bf16Unit::kAvx512Bf16:
      return "avx512_bf16";
    case Bf16Unit::kAmx:
      return "amx";
  }
  return "?";
}

bool bf16_unit_supported(Bf16Unit unit) {
#if defined(__x86_64__)
  static const bool avx512_bf16 = cpu_has_avx512_bf16();
  static const bool amx = cpu_has_amx_bf16();
  switch (unit) {
    case Bf16Unit::kEmulated:
      return true;
    case Bf16Unit::kAvx512Bf16:
      return avx512_bf16;
    case Bf16Unit::kAmx:
      return amx;
  }
  return false;
#else
  return unit == Bf16Unit::kEmulated;
#endif
}

Bf16Unit best_bf16_unit() {
  if (vecmath::best_isa() != vecmath::Isa::kAvx512) return Bf16Unit::kEmulated;
  if (bf16_unit_supported(Bf16Unit::kAmx)) return Bf16Unit::kAmx;
  if (bf16_unit_supported(Bf16Unit::kAvx512Bf16)) return Bf16Unit::kAvx512Bf16;
  return Bf16Unit::kEmulated;
}

void gemm_bf16(const GemmArgs<float>& args, Bf16Unit unit) {
  ROTA_CHECK(bf16_unit_supported(unit), "gemm_bf16: this CPU cannot run the {} unit",
             bf16_unit_name(unit));
  run_gemm_bf16(args, unit);
}

void gemm_bf16(const GemmArgs<float>& args) {
  static const Bf16Unit chosen = best_bf16_unit();
  run_gemm_bf16(args, chosen);
}

}  // namespace rota::backend::small_gemm
