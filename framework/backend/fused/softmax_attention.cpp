// Fused softmax attention: online-softmax forward over key tiles, tile-recomputing backward.
#include "framework/backend/fused/softmax_attention.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <vector>

#include "framework/backend/cpu/dispatch.h"
#include "framework/backend/cpu/parallel.h"
#include "framework/backend/cpu/row_kernels.h"
#include "framework/backend/cpu/vector_math.h"
#include "framework/base/seed_mix.h"

namespace rota::backend {

namespace {

// Tile sizes. A query block of kQueryBlock rows meets one key tile of kKeyBlock keys at a time,
// so per thread only kQueryBlock × kKeyBlock scores (plus transposed K/V tiles) ever exist.
// 32 × 64 f32 scores are 8 KB: the score tile, the K tile and the query rows stay in L1/L2.
constexpr int64_t kQueryBlock = 32;
constexpr int64_t kKeyBlock = 64;

// Backward: aim for at least this many independent work units when bias slices are shared by
// many (batch, head) slices, and never spend more than kPartialBudgetBytes on the partial dbias
// buffers that make it possible. Both depend on shapes only, never on the thread count.
constexpr int64_t kTargetBackwardUnits = 8;
constexpr int64_t kPartialBudgetBytes = int64_t{64} << 20;

// ---- shapes ----

struct Geometry {
  int64_t b = 0, h = 0, nq = 0, nk = 0, d = 0, dv = 0;
  int64_t slices() const { return b * h; }
};

Geometry check_qkv(const char* op, const Tensor& q, const Tensor& k, const Tensor& v) {
  ROTA_CHECK(q.defined() && k.defined() && v.defined(), "{}: q, k and v must be defined", op);
  ROTA_CHECK(q.dim() == 4 && k.dim() == 4 && v.dim() == 4 && q.size(0) == k.size(0) &&
                 q.size(0) == v.size(0) && q.size(1) == k.size(1) && q.size(1) == v.size(1) &&
                 q.size(3) == k.size(3) && k.size(2) == v.size(2),
             "{}: q {}, k {}, v {}: expected q [B, H, Nq, D], k [B, H, Nk, D], v [B, H, Nk, Dv]",
             op, shape_str(q.shape()), shape_str(k.shape()), shape_str(v.shape()));
  ROTA_CHECK(q.dtype() == k.dtype() && q.dtype() == v.dtype(), "{}: dtypes {}, {}, {} differ", op,
             dtype_name(q.dtype()), dtype_name(k.dtype()), dtype_name(v.dtype()));
  return Geometry{q.size(0), q.size(1), q.size(2), k.size(2), q.size(3), v.size(3)};
}

// How the bias is read and how its gradient is laid out. Element (b, h, i, j) of the broadcast
// bias sits at read offset b·sb + h·sh + i·si + j·sj (0 along broadcast dims); its gradient goes
// to the contiguous dbias buffer of the bias's own 4-D shape [B', H', Nq', Nk'] at
// (b'·H' + h')·Nq'·Nk' + i·gi + j·gj (again 0 along broadcast dims).
struct BiasLayout {
  bool defined = false;
  Shape shape4;  // bias's shape left-padded with ones to 4 dims
  int64_t sb = 0, sh = 0, si = 0, sj = 0;
  bool has_b = false, has_h = false;  // bias varies along the batch / head dim
  int64_t gi = 0, gj = 0;             // dbias strides within one bias slice
  int64_t slice_numel = 0;            // Nq'·Nk'
  int64_t g_origin = 0;               // offset of element (i, j) = (0, 0) within a dbias slice
};

BiasLayout bias_layout(const char* op, const Tensor& bias, const Tensor& q, const Geometry& g) {
  BiasLayout layout;
  if (!bias.defined()) return layout;
  layout.defined = true;
  ROTA_CHECK(bias.dtype() == q.dtype(), "{}: bias dtype {} differs from q's {}", op,
             dtype_name(bias.dtype()), dtype_name(q.dtype()));
  ROTA_CHECK(bias.dim() <= 4, "{}: bias {} has more than 4 dims (target [B, H, Nq, Nk] = {})", op,
             shape_str(bias.shape()), shape_str({g.b, g.h, g.nq, g.nk}));
  const Shape target = {g.b, g.h, g.nq, g.nk};
  const int64_t pad = 4 - bias.dim();
  layout.shape4 = Shape(4, 1);
  std::vector<int64_t> read(4, 0);
  for (int64_t d = 0; d < 4; ++d) {
    if (d < pad) continue;
    const int64_t size = bias.size(d - pad);
    ROTA_CHECK(size == target[d] || size == 1,
               "{}: bias {} does not broadcast to [B, H, Nq, Nk] = {} (dim {})", op,
               shape_str(bias.shape()), shape_str(target), d - pad);
    layout.shape4[d] = size;
    read[d] = size == 1 ? 0 : bias.strides()[d - pad];
  }
  layout.sb = read[0];
  layout.sh = read[1];
  layout.si = read[2];
  layout.sj = read[3];
  layout.has_b = layout.shape4[0] != 1;
  layout.has_h = layout.shape4[1] != 1;
  layout.gj = layout.shape4[3] != 1 ? 1 : 0;
  layout.gi = layout.shape4[2] != 1 ? layout.shape4[3] : 0;
  layout.slice_numel = layout.shape4[2] * layout.shape4[3];
  return layout;
}

// Non-zero flags of a mask of any dtype, row-major: 1 = visible.
std::vector<uint8_t> visible_flags(const Tensor& mask_in) {
  const Tensor mask =
      (mask_in.dtype() == DType::kBF16 ? mask_in.to(DType::kF32) : mask_in).contiguous();
  std::vector<uint8_t> flags(static_cast<size_t>(mask.numel()));
  const auto fill = [&](auto tag) {
    const auto* p = mask.data<decltype(tag)>();
    for (size_t i = 0; i < flags.size(); ++i) flags[i] = p[i] != 0 ? 1 : 0;
  };
  if (is_floating(mask.dtype())) {
    dispatch_floating(mask.dtype(), "softmax_attention mask", fill);
  } else {
    dispatch_index(mask.dtype(), "softmax_attention mask", fill);
  }
  return flags;
}

struct MaskFlags {
  std::vector<uint8_t> key;       // [B, Nk] or empty
  std::vector<uint8_t> pair;      // [Nq, Nk] or empty
  std::vector<int64_t> segments;  // [B, Nk] document ids or empty
};

MaskFlags mask_flags(const char* op, const SoftmaxAttentionMasks& masks, const Geometry& g) {
  MaskFlags flags;
  ROTA_CHECK(masks.window >= 0, "{}: window must be >= 0 (0 = no window), got {}", op,
             masks.window);
  if (masks.key_padding_mask.defined()) {
    ROTA_CHECK(masks.key_padding_mask.shape() == Shape({g.b, g.nk}),
               "{}: key_padding_mask {} must be [B, Nk] = {}", op,
               shape_str(masks.key_padding_mask.shape()), shape_str({g.b, g.nk}));
    flags.key = visible_flags(masks.key_padding_mask);
  }
  if (masks.visibility_mask.defined()) {
    ROTA_CHECK(masks.visibility_mask.shape() == Shape({g.nq, g.nk}),
               "{}: visibility_mask {} must be [Nq, Nk] = {}", op,
               shape_str(masks.visibility_mask.shape()), shape_str({g.nq, g.nk}));
    flags.pair = visible_flags(masks.visibility_mask);
  }
  if (masks.segment_ids.defined()) {
    ROTA_CHECK(
        masks.segment_ids.shape() == Shape({g.b, g.nk}) &&
            (masks.segment_ids.dtype() == DType::kI64 || masks.segment_ids.dtype() == DType::kI32),
        "{}: segment_ids {} {} must be integers [B, Nk] = {}", op,
        dtype_name(masks.segment_ids.dtype()), shape_str(masks.segment_ids.shape()),
        shape_str({g.b, g.nk}));
    ROTA_CHECK(masks.query_offset + g.nq <= g.nk,
               "{}: with segment ids the queries (offset {} + {}) must sit at key positions < {}",
               op, masks.query_offset, g.nq, g.nk);
    const Tensor ids = masks.segment_ids.to(DType::kI64).contiguous();
    flags.segments.assign(ids.data<int64_t>(), ids.data<int64_t>() + ids.numel());
  }
  return flags;
}

// ---- dropout: keep_ij is a hash of (seed, b, h, i, j) ----

// One key per attention row, chaining the mix through b, h and i so that every row's stream is
// unrelated to its neighbours'.
inline uint64_t dropout_row_key(uint64_t seed, int64_t b, int64_t h, int64_t i) {
  uint64_t x = mix64(seed ^ kGoldenGamma);
  x = mix64(x + static_cast<uint64_t>(b));
  x = mix64(x + static_cast<uint64_t>(h));
  return mix64(x + static_cast<uint64_t>(i));
}

struct DropoutRule {
  bool active = false;
  uint32_t threshold = 0;  // keep when the 32-bit draw >= threshold: P(keep) = 1 − p
  double keep_scale = 1.0;
  uint64_t seed = 0;
};

DropoutRule dropout_rule(const char* op, double p, uint64_t seed) {
  ROTA_CHECK(p >= 0.0 && p < 1.0, "{}: dropout_p = {} is outside [0, 1)", op, p);
  DropoutRule rule;
  rule.active = p > 0.0;
  rule.threshold = static_cast<uint32_t>(std::ldexp(p, 32));  // p < 1: fits
  rule.keep_scale = 1.0 / (1.0 - p);
  rule.seed = seed;
  return rule;
}

// keep[c] = keep_{i, j0+c}/(1−p) for c < cols, with the row's key from dropout_row_key.
template <typename T>
void keep_factors(uint64_t row_key, int64_t j0, int64_t cols, const DropoutRule& rule, T* keep) {
  const T scale = static_cast<T>(rule.keep_scale);
  for (int64_t c = 0; c < cols; ++c) {
    const uint64_t draw = mix64(row_key + static_cast<uint64_t>(j0 + c) * kGoldenGamma);
    keep[c] = static_cast<uint32_t>(draw >> 32) >= rule.threshold ? scale : T(0);
  }
}

// ---- the problem as the tile loops see it ----

template <typename T>
struct Problem {
  Geometry g;
  const T* q = nullptr;  // [B, H, Nq, D] contiguous
  const T* k = nullptr;  // [B, H, Nk, D]
  const T* v = nullptr;  // [B, H, Nk, Dv]
  const T* bias = nullptr;
  BiasLayout bias_layout;
  const uint8_t* key_visible = nullptr;   // [B, Nk]
  const uint8_t* pair_visible = nullptr;  // [Nq, Nk]
  const int64_t* segments = nullptr;      // [B, Nk] document ids
  T scale = 1;
  bool causal = false;
  int64_t off = 0;
  int64_t window = 0;  // > 0: key j hidden from query i when off + i − j >= window
  DropoutRule dropout;
};

template <typename T>
Problem<T> make_problem(const Geometry& g, const Tensor& q, const Tensor& k, const Tensor& v,
                        const Tensor& bias, const BiasLayout& layout, const MaskFlags& flags,
                        double scale, const SoftmaxAttentionMasks& masks,
                        const DropoutRule& dropout) {
  Problem<T> p;
  p.g = g;
  p.q = q.data<T>();
  p.k = k.data<T>();
  p.v = v.data<T>();
  p.bias = layout.defined ? bias.data<T>() : nullptr;
  p.bias_layout = layout;
  p.key_visible = flags.key.empty() ? nullptr : flags.key.data();
  p.pair_visible = flags.pair.empty() ? nullptr : flags.pair.data();
  p.segments = flags.segments.empty() ? nullptr : flags.segments.data();
  p.scale = static_cast<T>(scale);
  p.causal = masks.causal;
  p.off = masks.query_offset;
  p.window = masks.window;
  p.dropout = dropout;
  return p;
}

// One (b, h) slice of the problem: slice = b·H + h.
template <typename T>
struct SliceInputs {
  int64_t b, h;
  const T* q;  // [Nq, D]
  const T* k;  // [Nk, D]
  const T* v;  // [Nk, Dv]
};

template <typename T>
SliceInputs<T> slice_of(const Problem<T>& p, int64_t slice) {
  const Geometry& g = p.g;
  return {slice / g.h, slice % g.h, p.q + slice * g.nq * g.d, p.k + slice * g.nk * g.d,
          p.v + slice * g.nk * g.dv};
}

// e^x in float: Cody-Waite range reduction x = n·ln2 + r and Cephes' degree-6 polynomial for
// e^r (vecmath's exp_reduce and exp_poly; about 2 ulp on [−87.3, 88]), 0 below −87.34 so that
// e^−inf = 0 exactly (hidden keys get exactly zero weight). Written with plain arithmetic and
// selects so that the softmax loops vectorise: libm's expf is an opaque call GCC only vectorises
// under -ffast-math, and it was the largest cost of a tile after the products.
inline float exp_vectorizable(float x) {
  const float clamped = std::min(std::max(x, -88.0f), 88.0f);
  const float nf = (clamped * vecmath::kLog2e + vecmath::kRoundToInt) - vecmath::kRoundToInt;
  const float r = vecmath::exp_reduce(clamped, nf);
  const float y = vecmath::exp_poly(r) * (r * r) + r + 1.0f;
  const float two_to_n = std::bit_cast<float>((static_cast<int32_t>(nf) + 127) << 23);
  return x < -87.33654f ? 0.0f : y * two_to_n;
}

// Softmax exponentials: the vectorisable form in f32; libm in f64, which exists for gradient
// checks and reference maths where every ulp counts more than speed.
inline float softmax_exp(float x) {
  return exp_vectorizable(x);
}
inline double softmax_exp(double x) {
  return std::exp(x);
}

// x: [cols, width] rows → xt: [width, kKeyBlock], columns cols.. zeroed.
// Transposing a tile once lets every score and dP row run its inner loop along keys with unit
// stride, which vectorises; a dot product per (i, j) would end in a horizontal sum per entry.
template <typename T>
void transpose_tile(const T* x, int64_t cols, int64_t width, T* xt) {
  for (int64_t c = 0; c < cols; ++c) {
    for (int64_t d = 0; d < width; ++d) xt[d * kKeyBlock + c] = x[c * width + d];
  }
  if (cols < kKeyBlock) {
    for (int64_t d = 0; d < width; ++d)
      std::fill(xt + d * kKeyBlock + cols, xt + (d + 1) * kKeyBlock, T(0));
  }
}

// s[r, 0:kKeyBlock] = Σ_d a[r, d]·bt[d, 0:kKeyBlock] for r < rows; a: [rows, dim] with row
// stride a_stride, bt: [dim, kKeyBlock], s: [rows, kKeyBlock].
// Four rows at a time share every load of a bt row, and their 4 × kKeyBlock sums are local
// arrays of fixed size that the compiler keeps in registers. Accumulating into the score row
// in memory instead made each step wait for the previous step's store (the loop was
// store-bound at a few flops per cycle).
template <typename T>
void rows_times_tile(const T* a, int64_t a_stride, int64_t rows, const T* bt, int64_t dim, T* s) {
  int64_t r = 0;
  for (; r + 4 <= rows; r += 4) {
    T s0[kKeyBlock] = {}, s1[kKeyBlock] = {}, s2[kKeyBlock] = {}, s3[kKeyBlock] = {};
    const T* a0 = a + r * a_stride;
    for (int64_t d = 0; d < dim; ++d) {
      const T x0 = a0[d], x1 = a0[a_stride + d], x2 = a0[2 * a_stride + d],
              x3 = a0[3 * a_stride + d];
      const T* bd = bt + d * kKeyBlock;
#pragma omp simd
      for (int64_t c = 0; c < kKeyBlock; ++c) {
        s0[c] += x0 * bd[c];
        s1[c] += x1 * bd[c];
        s2[c] += x2 * bd[c];
        s3[c] += x3 * bd[c];
      }
    }
    std::copy(s0, s0 + kKeyBlock, s + r * kKeyBlock);
    std::copy(s1, s1 + kKeyBlock, s + (r + 1) * kKeyBlock);
    std::copy(s2, s2 + kKeyBlock, s + (r + 2) * kKeyBlock);
    std::copy(s3, s3 + kKeyBlock, s + (r + 3) * kKeyBlock);
  }
  for (; r < rows; ++r) {
    T s0[kKeyBlock] = {};
    const T* ar = a + r * a_stride;
    for (int64_t d = 0; d < dim; ++d) {
      const T x0 = ar[d];
      const T* bd = bt + d * kKeyBlock;
#pragma omp simd
      for (int64_t c = 0; c < kKeyBlock; ++c) s0[c] += x0 * bd[c];
    }
    std::copy(s0, s0 + kKeyBlock, s + r * kKeyBlock);
  }
}

// y[0:width] += Σ_{n < count} w[n·w_stride]·x[n·x_stride + 0:width], skipping zero weights
// (hidden or dropped entries). The running sum of each kRowChunk-wide piece of y lives in a
// fixed-size local array (registers) across all n, for the same reason as in rows_times_tile.
constexpr int64_t kRowChunk = 64;

template <typename T>
void weighted_row_sum(T* y, int64_t width, const T* w, int64_t w_stride, const T* x,
                      int64_t x_stride, int64_t count) {
  int64_t x0 = 0;
  for (; x0 + kRowChunk <= width; x0 += kRowChunk) {
    T acc[kRowChunk];
    std::copy(y + x0, y + x0 + kRowChunk, acc);
    for (int64_t n = 0; n < count; ++n) {
      const T wn = w[n * w_stride];
      if (wn == T(0)) continue;
      const T* xn = x + n * x_stride + x0;
#pragma omp simd
      for (int64_t e = 0; e < kRowChunk; ++e) acc[e] += wn * xn[e];
    }
    std::copy(acc, acc + kRowChunk, y + x0);
  }
  if (x0 < width) {  // the last width % kRowChunk columns
    for (int64_t n = 0; n < count; ++n) {
      const T wn = w[n * w_stride];
      if (wn != T(0)) axpy_row(y + x0, wn, x + n * x_stride + x0, width - x0);
    }
  }
}

// s: [rows, kKeyBlock] (first cols used), for query rows i0.. and keys j0.. of slice (b, h):
//   s_rc = scale·q_{i0+r}·k_{j0+c} + bias(b, h, i0+r, j0+c),  −inf where the key is hidden.
// qs: [Nq, D] the slice's queries, kt: [D, kKeyBlock] the transposed key tile.
template <typename T>
void score_tile(const Problem<T>& p, int64_t b, int64_t h, const T* qs, const T* kt, int64_t i0,
                int64_t rows, int64_t j0, int64_t cols, T* s) {
  const int64_t dim = p.g.d;
  const T neg_inf = -std::numeric_limits<T>::infinity();
  const T scale = p.scale;
  const BiasLayout& bl = p.bias_layout;
  rows_times_tile(qs + i0 * dim, dim, rows, kt, dim, s);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t i = i0 + r;
    T* sr = s + r * kKeyBlock;
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c) sr[c] *= scale;
    if (p.bias) {
      const T* br = p.bias + b * bl.sb + h * bl.sh + i * bl.si + j0 * bl.sj;
      const int64_t sj = bl.sj;
      for (int64_t c = 0; c < cols; ++c) sr[c] += br[c * sj];
    }
    if (p.causal) {  // key j is visible iff j <= off + i
      const int64_t first_hidden = std::max<int64_t>(0, p.off + i - j0 + 1);
      for (int64_t c = first_hidden; c < cols; ++c) sr[c] = neg_inf;
    }
    if (p.window > 0) {  // key j is visible iff off + i − j < window, i.e. j > off + i − window
      const int64_t last_hidden = std::min<int64_t>(cols, p.off + i - p.window - j0 + 1);
      for (int64_t c = 0; c < last_hidden; ++c) sr[c] = neg_inf;
    }
    if (p.key_visible) {
      const uint8_t* kv = p.key_visible + b * p.g.nk + j0;
      for (int64_t c = 0; c < cols; ++c) sr[c] = kv[c] ? sr[c] : neg_inf;
    }
    if (p.pair_visible) {
      const uint8_t* pv = p.pair_visible + i * p.g.nk + j0;
      for (int64_t c = 0; c < cols; ++c) sr[c] = pv[c] ? sr[c] : neg_inf;
    }
    if (p.segments) {  // key j is visible iff it is in query i's document
      const int64_t* row = p.segments + b * p.g.nk;
      const int64_t doc = row[p.off + i];
      for (int64_t c = 0; c < cols; ++c) sr[c] = row[j0 + c] == doc ? sr[c] : neg_inf;
    }
  }
}

// Per-thread buffers of the forward.
template <typename T>
struct ForwardScratch {
  std::vector<T> kt, s, keep, acc, m, l;
  explicit ForwardScratch(const Geometry& g)
      : kt(std::max<int64_t>(1, g.d) * kKeyBlock),
        s(kQueryBlock * kKeyBlock),
        keep(kKeyBlock),
        acc(kQueryBlock * std::max<int64_t>(1, g.dv)),
        m(kQueryBlock),
        l(kQueryBlock) {}
};

// One query block [i0, i0+rows) of one (b, h) slice, online softmax over key tiles:
//   m_i = running max, l_i = Σ_j exp(ℓ_ij − m_i), acc_i = Σ_j exp(ℓ_ij − m_i)·keep_ij/(1−p)·v_j,
// rescaled by exp(m_old − m_new) when the max grows; then out_i = acc_i / l_i and
// logsumexp_i = m_i + log l_i. Rows with no visible key: out_i = 0, logsumexp_i = −inf.
// out: [Nq, Dv] and lse: [Nq] of this slice.
template <typename T>
void forward_block(const Problem<T>& p, int64_t slice, int64_t i0, int64_t rows, T* out, T* lse,
                   ForwardScratch<T>& w) {
  const Geometry& g = p.g;
  const auto [b, h, qs, ks, vs] = slice_of(p, slice);
  const T neg_inf = -std::numeric_limits<T>::infinity();
  std::fill(w.acc.begin(), w.acc.begin() + rows * g.dv, T(0));
  std::fill(w.m.begin(), w.m.end(), neg_inf);
  std::fill(w.l.begin(), w.l.end(), T(0));
  // Causal: the block's last row sees keys j <= off + i0 + rows − 1; later tiles are skipped.
  const int64_t j_end = p.causal ? std::clamp<int64_t>(p.off + i0 + rows, 0, g.nk) : g.nk;
  // Window: the block's first row sees keys j > off + i0 − W; earlier tiles are skipped.
  const int64_t j_begin =
      p.window > 0 ? std::clamp<int64_t>(p.off + i0 - p.window + 1, 0, g.nk) : 0;
  for (int64_t j0 = j_begin; j0 < j_end; j0 += kKeyBlock) {
    const int64_t cols = std::min(kKeyBlock, j_end - j0);
    transpose_tile(ks + j0 * g.d, cols, g.d, w.kt.data());
    score_tile(p, b, h, qs, w.kt.data(), i0, rows, j0, cols, w.s.data());
    for (int64_t r = 0; r < rows; ++r) {
      T* sr = w.s.data() + r * kKeyBlock;
      T tile_max = neg_inf;
#pragma omp simd reduction(max : tile_max)
      for (int64_t c = 0; c < cols; ++c) tile_max = std::max(tile_max, sr[c]);
      const T m_new = std::max(w.m[r], tile_max);
      if (m_new == neg_inf) continue;               // nothing visible in this row yet
      const T alpha = softmax_exp(w.m[r] - m_new);  // 0 when the row had no visible key before
      T sum = 0;
#pragma omp simd reduction(+ : sum)
      for (int64_t c = 0; c < cols; ++c) {
        sr[c] = softmax_exp(sr[c] - m_new);
        sum += sr[c];
      }
      w.l[r] = w.l[r] * alpha + sum;
      w.m[r] = m_new;
      T* ar = w.acc.data() + r * g.dv;
      if (alpha != T(1)) {
#pragma omp simd
        for (int64_t x = 0; x < g.dv; ++x) ar[x] *= alpha;
      }
      if (p.dropout.active) {
        keep_factors(dropout_row_key(p.dropout.seed, b, h, i0 + r), j0, cols, p.dropout,
                     w.keep.data());
        for (int64_t c = 0; c < cols; ++c) sr[c] *= w.keep[c];
      }
      weighted_row_sum(ar, g.dv, sr, 1, vs + j0 * g.dv, g.dv, cols);  // ar += Σ_c p̃_c v_c
    }
  }
  for (int64_t r = 0; r < rows; ++r) {
    T* o = out + (i0 + r) * g.dv;
    const T* ar = w.acc.data() + r * g.dv;
    if (w.l[r] == T(0)) {  // every key hidden
      std::fill(o, o + g.dv, T(0));
      lse[i0 + r] = neg_inf;
      continue;
    }
    const T inv = T(1) / w.l[r];
    for (int64_t x = 0; x < g.dv; ++x) o[x] = ar[x] * inv;
    lse[i0 + r] = w.m[r] + std::log(w.l[r]);
  }
}

// ---- backward ----

template <typename T>
struct BackwardScratch {
  std::vector<T> kt, vt, s, ds, keep, delta;
  explicit BackwardScratch(const Geometry& g)
      : kt(std::max<int64_t>(1, g.d) * kKeyBlock),
        vt(std::max<int64_t>(1, g.dv) * kKeyBlock),
        s(kQueryBlock * kKeyBlock),
        ds(kQueryBlock * kKeyBlock),
        keep(kKeyBlock),
        delta(std::max<int64_t>(1, g.nq)) {}
};

// Where one slice's gradients go: dq/dk/dv: this slice's rows (null when not needed);
// dbias: the base of the bias slice this (b, h) reads (null when not needed).
template <typename T>
struct SliceGrads {
  T* dq = nullptr;  // [Nq, D]
  T* dk = nullptr;  // [Nk, D]
  T* dv = nullptr;  // [Nk, Dv]
  T* dbias = nullptr;
};

// One (b, h) slice. For every key tile (outer, so its dK/dV rows stay hot) and every query
// block that can see it, with p_ij = exp(ℓ_ij − logsumexp_i) recomputed from the scores:
//   dp_ij = (g_i·v_j)·keep_ij/(1−p),  Δ_i = g_i·out_i,  G_ij = p_ij·(dp_ij − Δ_i),
//   dv_j += Σ_i p_ij·keep_ij/(1−p)·g_i,  dk_j += s·Σ_i G_ij q_i,  dq_i += s·Σ_j G_ij k_j,
//   dbias(b, h, i, j) += G_ij.
// Δ_i = Σ_j p_ij·dp_ij holds with dropout too, since out_i = Σ_j p_ij·keep_ij/(1−p)·v_j.
// out, gout: [Nq, Dv] and lse: [Nq] of this slice.
template <typename T>
void backward_slice(const Problem<T>& p, int64_t slice, const T* out, const T* lse, const T* gout,
                    const SliceGrads<T>& grads, BackwardScratch<T>& w) {
  const Geometry& g = p.g;
  const auto [b, h, qs, ks, vs] = slice_of(p, slice);
  const T neg_inf = -std::numeric_limits<T>::infinity();
  const BiasLayout& bl = p.bias_layout;
  for (int64_t i = 0; i < g.nq; ++i) w.delta[i] = dot_row(gout + i * g.dv, out + i * g.dv, g.dv);
  for (int64_t j0 = 0; j0 < g.nk; j0 += kKeyBlock) {
    const int64_t cols = std::min(kKeyBlock, g.nk - j0);
    transpose_tile(ks + j0 * g.d, cols, g.d, w.kt.data());
    transpose_tile(vs + j0 * g.dv, cols, g.dv, w.vt.data());
    // Causal: query i sees key j0 only when j0 <= off + i.
    const int64_t i_begin = p.causal ? std::clamp<int64_t>(j0 - p.off, 0, g.nq) : 0;
    // Window: query i sees the tile's last key j0 + cols − 1 only when off + i < j0 + cols − 1
    // + W; later queries are skipped.
    const int64_t i_end =
        p.window > 0 ? std::clamp<int64_t>(j0 + cols - 1 + p.window - p.off, 0, g.nq) : g.nq;
    for (int64_t i0 = i_begin; i0 < i_end; i0 += kQueryBlock) {
      const int64_t rows = std::min(kQueryBlock, i_end - i0);
      score_tile(p, b, h, qs, w.kt.data(), i0, rows, j0, cols, w.s.data());
      // ds ← dp̃_ij = g_i·v_j for the whole block (rows whose logsumexp is −inf are zeroed below)
      rows_times_tile(gout + i0 * g.dv, g.dv, rows, w.vt.data(), g.dv, w.ds.data());
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t i = i0 + r;
        T* pr = w.s.data() + r * kKeyBlock;
        T* dsr = w.ds.data() + r * kKeyBlock;
        const T row_lse = lse[i];
        if (row_lse == neg_inf) {  // every key hidden: p = 0, no gradient
          std::fill(pr, pr + cols, T(0));
          std::fill(dsr, dsr + cols, T(0));
          continue;
        }
#pragma omp simd
        for (int64_t c = 0; c < cols; ++c) pr[c] = softmax_exp(pr[c] - row_lse);
        if (p.dropout.active) {
          keep_factors(dropout_row_key(p.dropout.seed, b, h, i), j0, cols, p.dropout,
                       w.keep.data());
          for (int64_t c = 0; c < cols; ++c) dsr[c] *= w.keep[c];
        }
        const T delta = w.delta[i];
#pragma omp simd
        for (int64_t c = 0; c < cols; ++c) dsr[c] = pr[c] * (dsr[c] - delta);
        if (p.dropout.active) {
          for (int64_t c = 0; c < cols; ++c) pr[c] *= w.keep[c];  // p̃ for dV
        }
      }
      // dq and dk collect Σ G·k and Σ G·q here; the factor s is applied once per slice below.
      if (grads.dv) {  // dv_j += Σ_i p̃_ij g_i
        for (int64_t c = 0; c < cols; ++c) {
          weighted_row_sum(grads.dv + (j0 + c) * g.dv, g.dv, w.s.data() + c, kKeyBlock,
                           gout + i0 * g.dv, g.dv, rows);
        }
      }
      if (grads.dk) {  // dk_j += Σ_i G_ij q_i
        for (int64_t c = 0; c < cols; ++c) {
          weighted_row_sum(grads.dk + (j0 + c) * g.d, g.d, w.ds.data() + c, kKeyBlock,
                           qs + i0 * g.d, g.d, rows);
        }
      }
      if (grads.dq) {  // dq_i += Σ_j G_ij k_j
        for (int64_t r = 0; r < rows; ++r) {
          weighted_row_sum(grads.dq + (i0 + r) * g.d, g.d, w.ds.data() + r * kKeyBlock, 1,
                           ks + j0 * g.d, g.d, cols);
        }
      }
      if (grads.dbias) {
        for (int64_t r = 0; r < rows; ++r) {
          T* dbr = grads.dbias + (i0 + r) * bl.gi + j0 * bl.gj;
          const T* dsr = w.ds.data() + r * kKeyBlock;
          for (int64_t c = 0; c < cols; ++c) dbr[c * bl.gj] += dsr[c];
        }
      }
    }
  }
  const T scale = p.scale;
  if (grads.dq) {
#pragma omp simd
    for (int64_t e = 0; e < g.nq * g.d; ++e) grads.dq[e] *= scale;
  }
  if (grads.dk) {
#pragma omp simd
    for (int64_t e = 0; e < g.nk * g.d; ++e) grads.dk[e] *= scale;
  }
}

// Backward work units. Slices that read the same bias slice form a group (their dbias
// contributions collide); a group is cut into `parts` runs of consecutive members, part 0
// writing into dbias and part p > 0 into its own partial buffer, summed in part order after
// the parallel loop. Units are (group, part), so each dq/dk/dv row and each dbias element is
// written by exactly one unit in a fixed order: the result does not depend on the threads.
struct UnitPlan {
  int64_t groups = 0;
  int64_t group_size = 1;
  int64_t parts = 1;
  int64_t nb_in = 1, nh_in = 1;  // a group spans nb_in batches × nh_in heads
  bool with_dbias = false;

  // The m-th member slice of group gid.
  int64_t member(const Geometry& g, const BiasLayout& bl, int64_t gid, int64_t m) const {
    if (!with_dbias) return gid;
    const int64_t b = bl.has_b ? gid / (bl.has_h ? g.h : 1) : m / nh_in;
    const int64_t h = bl.has_h ? gid % g.h : m % nh_in;
    return b * g.h + h;
  }
};

UnitPlan plan_units(const Geometry& g, const BiasLayout& bl, bool with_dbias, size_t elem_size) {
  UnitPlan plan;
  plan.with_dbias = with_dbias;
  if (!with_dbias) {
    plan.groups = g.slices();
    return plan;
  }
  plan.nb_in = bl.has_b ? 1 : g.b;
  plan.nh_in = bl.has_h ? 1 : g.h;
  plan.group_size = plan.nb_in * plan.nh_in;
  plan.groups = plan.group_size > 0 ? g.slices() / plan.group_size : 0;
  if (plan.groups == 0) return plan;
  const int64_t wanted = (kTargetBackwardUnits + plan.groups - 1) / plan.groups;
  plan.parts = std::max<int64_t>(1, std::min(plan.group_size, wanted));
  const int64_t bias_bytes =
      std::max<int64_t>(1, plan.groups * bl.slice_numel * static_cast<int64_t>(elem_size));
  plan.parts = std::min(plan.parts, 1 + kPartialBudgetBytes / bias_bytes);
  return plan;
}

// Forward work units [begin, end): unit u is query block u % blocks of slice u / blocks.
template <typename T>
void forward_units(const Problem<T>& p, T* out, T* lse, int64_t begin, int64_t end) {
  const Geometry& g = p.g;
  const int64_t blocks = (g.nq + kQueryBlock - 1) / kQueryBlock;
  ForwardScratch<T> scratch(g);
  for (int64_t u = begin; u < end; ++u) {
    const int64_t slice = u / blocks;
    const int64_t i0 = (u % blocks) * kQueryBlock;
    forward_block(p, slice, i0, std::min(kQueryBlock, g.nq - i0), out + slice * g.nq * g.dv,
                  lse + slice * g.nq, scratch);
  }
}

// Everything the backward units read and write (whole tensors; see SliceGrads for one slice).
template <typename T>
struct BackwardTargets {
  const T* out;       // [B, H, Nq, Dv]
  const T* lse;       // [B, H, Nq]
  const T* grad_out;  // [B, H, Nq, Dv]
  T* dq;              // [B, H, Nq, D] or null
  T* dk;              // [B, H, Nk, D] or null
  T* dv;              // [B, H, Nk, Dv] or null
  T* dbias;           // [B', H', Nq', Nk'] or null
  T* partials;        // [parts − 1, groups, Nq'·Nk'] or null
};

// Backward work units [begin, end): unit u is part u % parts of bias group u / parts.
template <typename T>
void backward_units(const Problem<T>& p, const UnitPlan& plan, const BackwardTargets<T>& t,
                    int64_t begin, int64_t end) {
  const Geometry& g = p.g;
  const BiasLayout& layout = p.bias_layout;
  BackwardScratch<T> scratch(g);
  for (int64_t u = begin; u < end; ++u) {
    const int64_t gid = u / plan.parts, part = u % plan.parts;
    const int64_t m_begin = part * plan.group_size / plan.parts;
    const int64_t m_end = (part + 1) * plan.group_size / plan.parts;
    T* dbias_slice = nullptr;
    if (t.dbias) {
      dbias_slice = part == 0 ? t.dbias + gid * layout.slice_numel
                              : t.partials + ((part - 1) * plan.groups + gid) * layout.slice_numel;
      dbias_slice += layout.g_origin;
    }
    for (int64_t m = m_begin; m < m_end; ++m) {
      const int64_t slice = plan.member(g, layout, gid, m);
      SliceGrads<T> sg;
      sg.dq = t.dq ? t.dq + slice * g.nq * g.d : nullptr;
      sg.dk = t.dk ? t.dk + slice * g.nk * g.d : nullptr;
      sg.dv = t.dv ? t.dv + slice * g.nk * g.dv : nullptr;
      sg.dbias = dbias_slice;
      backward_slice(p, slice, t.out + slice * g.nq * g.dv, t.lse + slice * g.nq,
                     t.grad_out + slice * g.nq * g.dv, sg, scratch);
    }
  }
}

// Instruction-set clones of the unit loops. The project compiles for baseline x86-64 (SSE2) so
// that binaries run on any machine; these four entry points are additionally compiled for
// AVX-512 and AVX2 and the best one is chosen once at load time (GCC target_clones, ifunc).
// flatten inlines the tile loops into each clone so that they are vectorised with that
// clone's registers: 16 floats per instruction with AVX-512 instead of 4.
#define ROTA_ISA_CLONES gnu::target_clones("avx512f", "avx2", "default"), gnu::flatten

[[ROTA_ISA_CLONES]] void forward_units_isa(const Problem<float>& p, float* out, float* lse,
                                           int64_t begin, int64_t end) {
  forward_units(p, out, lse, begin, end);
}
[[ROTA_ISA_CLONES]] void forward_units_isa(const Problem<double>& p, double* out, double* lse,
                                           int64_t begin, int64_t end) {
  forward_units(p, out, lse, begin, end);
}
[[ROTA_ISA_CLONES]] void backward_units_isa(const Problem<float>& p, const UnitPlan& plan,
                                            const BackwardTargets<float>& t, int64_t begin,
                                            int64_t end) {
  backward_units(p, plan, t, begin, end);
}
[[ROTA_ISA_CLONES]] void backward_units_isa(const Problem<double>& p, const UnitPlan& plan,
                                            const BackwardTargets<double>& t, int64_t begin,
                                            int64_t end) {
  backward_units(p, plan, t, begin, end);
}

#undef ROTA_ISA_CLONES

// The backward for both bias forms. relative_table undefined: dbias has bias's shape. Defined:
// bias is relative_bias_view(relative_table, Nq, Nk) and dbias is written straight into the
// table's gradient [H', n_rel] at (i, j) → (Nq − 1) − i + j, i.e. strides −1 and +1 from
// origin Nq − 1 (each head's row is one bias slice, so the unit plan is the generic one).
SoftmaxAttentionGrads backward_impl(const char* op, const Tensor& q_in, const Tensor& k_in,
                                    const Tensor& v_in, const Tensor& bias,
                                    const Tensor& relative_table, double scale,
                                    const SoftmaxAttentionMasks& masks, const Tensor& out_in,
                                    const Tensor& lse_in, const Tensor& grad_out_in,
                                    double dropout_p, uint64_t dropout_seed,
                                    const SoftmaxAttentionGradsNeeded& needed) {
  const Geometry g = check_qkv(op, q_in, k_in, v_in);
  ROTA_CHECK(std::isfinite(scale), "{}: scale {} is not finite", op, scale);
  const Shape out_shape = {g.b, g.h, g.nq, g.dv};
  ROTA_CHECK(out_in.defined() && grad_out_in.defined() && lse_in.defined() &&
                 out_in.shape() == out_shape && grad_out_in.shape() == out_shape &&
                 lse_in.shape() == Shape({g.b, g.h, g.nq}),
             "{}: out {}, grad_out {} must be {} and logsumexp {} must be [B, H, Nq]", op,
             out_in.defined() ? shape_str(out_in.shape()) : "undefined",
             grad_out_in.defined() ? shape_str(grad_out_in.shape()) : "undefined",
             shape_str(out_shape), lse_in.defined() ? shape_str(lse_in.shape()) : "undefined");
  ROTA_CHECK(out_in.dtype() == q_in.dtype() && grad_out_in.dtype() == q_in.dtype() &&
                 lse_in.dtype() == q_in.dtype(),
             "{}: out, logsumexp and grad_out must have q's dtype {}", op,
             dtype_name(q_in.dtype()));
  BiasLayout layout = bias_layout(op, bias, q_in, g);
  Shape dbias_shape = layout.shape4;
  if (relative_table.defined()) {
    const int64_t n_rel = g.nq + g.nk - 1;
    dbias_shape = {layout.shape4[1], n_rel};
    layout.gi = -1;
    layout.gj = 1;
    layout.slice_numel = n_rel;
    layout.g_origin = g.nq - 1;
  }
  const MaskFlags flags = mask_flags(op, masks, g);
  const DropoutRule rule = dropout_rule(op, dropout_p, dropout_seed);
  const Tensor q = q_in.contiguous(), k = k_in.contiguous(), v = v_in.contiguous();
  const Tensor out = out_in.contiguous(), lse = lse_in.contiguous();
  const Tensor grad_out = grad_out_in.contiguous();

  SoftmaxAttentionGrads grads;
  if (needed.q) grads.dq = zeros(q.shape(), q.dtype());
  if (needed.k) grads.dk = zeros(k.shape(), q.dtype());
  if (needed.v) grads.dv = zeros(v.shape(), q.dtype());
  const bool with_dbias = layout.defined && needed.bias;
  Tensor dbias4;
  if (with_dbias) dbias4 = zeros(dbias_shape, q.dtype());
  if (!needed.q && !needed.k && !needed.v && !with_dbias) return grads;

  const UnitPlan plan = plan_units(g, layout, with_dbias, dtype_size(q.dtype()));
  Tensor partials;
  if (with_dbias && plan.parts > 1) {
    partials = zeros({(plan.parts - 1) * plan.groups * layout.slice_numel}, q.dtype());
  }
  dispatch_floating(q.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    const Problem<T> p = make_problem<T>(g, q, k, v, bias, layout, flags, scale, masks, rule);
    const T* outp = out.data<T>();
    const T* lsep = lse.data<T>();
    const T* gop = grad_out.data<T>();
    T* dq = needed.q ? grads.dq.data<T>() : nullptr;
    T* dk = needed.k ? grads.dk.data<T>() : nullptr;
    T* dv = needed.v ? grads.dv.data<T>() : nullptr;
    T* db = with_dbias ? dbias4.data<T>() : nullptr;
    T* part_base = partials.defined() ? partials.data<T>() : nullptr;
    const BackwardTargets<T> targets{outp, lsep, gop, dq, dk, dv, db, part_base};
    const int64_t units = plan.groups * plan.parts;
    const int64_t per_unit = std::max<int64_t>(1, plan.group_size / plan.parts);
    const int64_t cost = per_unit * std::max<int64_t>(1, g.nq * g.nk) * (2 * g.d + 2 * g.dv + 8);
    parallel_for(units, cost, [&](int64_t begin, int64_t end) {
      backward_units_isa(p, plan, targets, begin, end);
    });
    if (part_base) {  // dbias += partial_1 + partial_2 + ... in this order, element by element
      const int64_t n = plan.groups * layout.slice_numel;
      parallel_for(n, plan.parts, [&](int64_t begin, int64_t end) {
        for (int64_t part = 1; part < plan.parts; ++part) {
          const T* src = part_base + (part - 1) * n;
          for (int64_t e = begin; e < end; ++e) db[e] += src[e];
        }
      });
    }
  });
  if (with_dbias) {
    grads.dbias = relative_table.defined() ? dbias4.reshape(relative_table.shape())
                                           : dbias4.reshape(bias.shape());
  }
  return grads;
}

}  // namespace

SoftmaxAttentionResult softmax_attention_forward(const Tensor& q_in, const Tensor& k_in,
                                                 const Tensor& v_in, const Tensor& bias,
                                                 double scale, const SoftmaxAttentionMasks& masks,
                                                 double dropout_p, uint64_t dropout_seed) {
  const char* op = "softmax_attention";
  const Geometry g = check_qkv(op, q_in, k_in, v_in);
  ROTA_CHECK(std::isfinite(scale), "{}: scale {} is not finite", op, scale);
  const BiasLayout layout = bias_layout(op, bias, q_in, g);
  const MaskFlags flags = mask_flags(op, masks, g);
  const DropoutRule rule = dropout_rule(op, dropout_p, dropout_seed);
  const Tensor q = q_in.contiguous(), k = k_in.contiguous(), v = v_in.contiguous();
  SoftmaxAttentionResult result;
  result.out = Tensor::empty({g.b, g.h, g.nq, g.dv}, q.dtype());
  result.logsumexp = Tensor::empty({g.b, g.h, g.nq}, q.dtype());
  dispatch_floating(q.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    const Problem<T> p = make_problem<T>(g, q, k, v, bias, layout, flags, scale, masks, rule);
    T* out = result.out.data<T>();
    T* lse = result.logsumexp.data<T>();
    const int64_t blocks = (g.nq + kQueryBlock - 1) / kQueryBlock;
    const int64_t cost = kQueryBlock * std::max<int64_t>(1, g.nk) * (g.d + g.dv + 8);
    parallel_for(g.slices() * blocks, cost,
                 [&](int64_t begin, int64_t end) { forward_units_isa(p, out, lse, begin, end); });
  });
  return result;
}

SoftmaxAttentionGrads softmax_attention_backward(const Tensor& q, const Tensor& k, const Tensor& v,
                                                 const Tensor& bias, double scale,
                                                 const SoftmaxAttentionMasks& masks,
                                                 const Tensor& out, const Tensor& logsumexp,
                                                 const Tensor& grad_out, double dropout_p,
                                                 uint64_t dropout_seed,
                                                 const SoftmaxAttentionGradsNeeded& needed) {
  return backward_impl("softmax_attention_backward", q, k, v, bias, Tensor(), scale, masks, out,
                       logsumexp, grad_out, dropout_p, dropout_seed, needed);
}

SoftmaxAttentionGrads softmax_attention_backward_relative(
    const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& table, double scale,
    const SoftmaxAttentionMasks& masks, const Tensor& out, const Tensor& logsumexp,
    const Tensor& grad_out, double dropout_p, uint64_t dropout_seed,
    const SoftmaxAttentionGradsNeeded& needed) {
  ROTA_CHECK(table.defined() && table.dim() == 2 && q.dim() == 4 && k.dim() == 4 &&
                 (table.size(0) == q.size(1) || table.size(0) == 1),
             "softmax_attention_backward_relative: table {} must be [H or 1, Nq + Nk − 1] for "
             "q {}, k {}",
             table.defined() ? shape_str(table.shape()) : "undefined", shape_str(q.shape()),
             shape_str(k.shape()));
  const Tensor bias = relative_bias_view(table, q.size(2), k.size(2));
  return backward_impl("softmax_attention_backward_relative", q, k, v, bias, table, scale, masks,
                       out, logsumexp, grad_out, dropout_p, dropout_seed, needed);
}

Tensor softmax_attention_dropout_mask(int64_t batch, int64_t heads, int64_t nq, int64_t nk,
                                      double dropout_p, uint64_t dropout_seed, DType dtype) {
  const DropoutRule rule = dropout_rule("softmax_attention_dropout_mask", dropout_p, dropout_seed);
  Tensor mask = Tensor::empty({batch, heads, nq, nk}, dtype);
  dispatch_floating(dtype, "softmax_attention_dropout_mask", [&](auto tag) {
    using T = decltype(tag);
    T* m = mask.data<T>();
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t h = 0; h < heads; ++h) {
        for (int64_t i = 0; i < nq; ++i) {
          T* row = m + ((b * heads + h) * nq + i) * nk;
          if (!rule.active) {
            std::fill(row, row + nk, T(1));
            continue;
          }
          const uint64_t key = dropout_row_key(dropout_seed, b, h, i);
          for (int64_t j0 = 0; j0 < nk; j0 += kKeyBlock) {
            keep_factors(key, j0, std::min(kKeyBlock, nk - j0), rule, row + j0);
          }
        }
      }
    }
  });
  return mask;
}

Tensor relative_bias_view(const Tensor& table, int64_t nq, int64_t nk) {
  ROTA_CHECK(
      table.defined() && table.dim() == 2 && nq >= 1 && nk >= 1 && table.size(1) == nq + nk - 1,
      "relative_bias_view: table {} must be [H, Nq + Nk − 1] for Nq = {}, Nk = {}",
      table.defined() ? shape_str(table.shape()) : "undefined", nq, nk);
  const int64_t sh = table.strides()[0], sr = table.strides()[1];
  // bias[0, h, i, j] = table[h, j − i + Nq − 1]: start at column Nq − 1, step −1 along i.
  return Tensor(table.storage(), {1, table.size(0), nq, nk}, {0, sh, -sr, sr},
                table.offset() + (nq - 1) * sr, table.dtype());
}

Tensor relative_bias_view_backward(const Tensor& grad_in, int64_t nq, int64_t nk) {
  ROTA_CHECK(
      grad_in.defined() && grad_in.dim() >= 3 && grad_in.size(-2) == nq && grad_in.size(-1) == nk,
      "relative_bias_view_backward: grad {} must be [..., H, Nq = {}, Nk = {}]",
      grad_in.defined() ? shape_str(grad_in.shape()) : "undefined", nq, nk);
  const int64_t heads = grad_in.size(-3);
  const int64_t lead = grad_in.numel() / std::max<int64_t>(1, heads * nq * nk);
  const Tensor grad = grad_in.contiguous();
  const int64_t n_rel = nq + nk - 1;
  Tensor table = zeros({heads, n_rel}, grad.dtype());
  dispatch_floating(grad.dtype(), "relative_bias_view_backward", [&](auto tag) {
    using T = decltype(tag);
    const T* gp = grad.data<T>();
    T* tp = table.data<T>();
    // dtable[h, j − i + Nq − 1] += grad[.., h, i, j]: each head's row is owned by one thread.
    parallel_for(heads, lead * nq * nk, [&](int64_t h_begin, int64_t h_end) {
      for (int64_t h = h_begin; h < h_end; ++h) {
        T* row = tp + h * n_rel;
        for (int64_t a = 0; a < lead; ++a) {
          for (int64_t i = 0; i < nq; ++i) {
            const T* gr = gp + ((a * heads + h) * nq + i) * nk;
            T* dst = row + (nq - 1 - i);
#pragma omp simd
            for (int64_t j = 0; j < nk; ++j) dst[j] += gr[j];
          }
        }
      }
    });
  });
  return table;
}

}  // namespace rota::backend
