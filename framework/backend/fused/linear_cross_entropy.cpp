// Fused LM-head loss: row tiles through oneDNN products and a one-pass softmax / gradient.
#include "framework/backend/fused/linear_cross_entropy.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "framework/backend/cpu/dispatch.h"
#include "framework/backend/cpu/isa_build.h"
#include "framework/backend/cpu/parallel.h"
#include "framework/backend/cpu/vector_math.h"
#include "framework/backend/primitives/matmul.h"

namespace rota::backend {

namespace {

constexpr const char* kOp = "linear_cross_entropy";

// A few passes over each logit (max, exp, sum, gradient, rounding).
constexpr int64_t kCostPerLogit = 8;

struct Layout {
  int64_t rows = 0;   // R: hidden's leading dims flattened
  int64_t embed = 0;  // E
  int64_t vocab = 0;  // V
  DType result = DType::kF32;
};

// Validates shapes, dtypes and options (everything but the target values).
Layout check_inputs(const Tensor& hidden, const Tensor& weight, const Tensor& bias,
                    const Tensor& targets, const LinearCrossEntropyOptions& options) {
  ROTA_CHECK(hidden.defined() && weight.defined() && targets.defined(),
             "{}: hidden, weight or targets are undefined", kOp);
  ROTA_CHECK(hidden.dim() >= 1 && weight.dim() == 2,
             "{}: hidden {} and weight {}: expected hidden [..., E] and weight [V, E]", kOp,
             shape_str(hidden.shape()), shape_str(weight.shape()));
  ROTA_CHECK(weight.size(1) == hidden.size(-1),
             "{}: hidden {} and weight {}: embedding dims differ (expected weight [V, {}])", kOp,
             shape_str(hidden.shape()), shape_str(weight.shape()), hidden.size(-1));
  ROTA_CHECK(hidden.dtype() == weight.dtype(), "{}: hidden dtype {} and weight dtype {} differ",
             kOp, dtype_name(hidden.dtype()), dtype_name(weight.dtype()));
  Layout layout;
  switch (hidden.dtype()) {
    case DType::kF32:
    case DType::kBF16:
      layout.result = DType::kF32;
      break;
    case DType::kF64:
      layout.result = DType::kF64;
      break;
    default:
      fail("{}: dtype {} is not supported (expected f32, f64 or bf16)", kOp,
           dtype_name(hidden.dtype()));
  }
  ROTA_CHECK(!options.round_dlogits_to_bf16 || layout.result == DType::kF32,
             "{}: round_dlogits_to_bf16 needs f32 or bf16 operands, got {}", kOp,
             dtype_name(hidden.dtype()));
  ROTA_CHECK(targets.dtype() == DType::kI32 || targets.dtype() == DType::kI64,
             "{}: targets dtype {} is not an index type (expected i32 or i64)", kOp,
             dtype_name(targets.dtype()));
  const Shape lead(hidden.shape().begin(), hidden.shape().end() - 1);
  ROTA_CHECK(targets.shape() == lead, "{}: hidden {} needs targets {}, got {}", kOp,
             shape_str(hidden.shape()), shape_str(lead), shape_str(targets.shape()));
  layout.rows = shape_numel(lead);
  layout.embed = weight.size(1);
  layout.vocab = weight.size(0);
  if (bias.defined()) {
    ROTA_CHECK(bias.shape() == Shape{layout.vocab},
               "{}: bias {} does not match weight {} (expected [{}])", kOp, shape_str(bias.shape()),
               shape_str(weight.shape()), layout.vocab);
    ROTA_CHECK(bias.dtype() == layout.result, "{}: bias dtype {} (expected {} for {} operands)",
               kOp, dtype_name(bias.dtype()), dtype_name(layout.result),
               dtype_name(hidden.dtype()));
  }
  ROTA_CHECK(layout.vocab > 0 || layout.rows == 0, "{}: weight {} has no classes", kOp,
             shape_str(weight.shape()));
  ROTA_CHECK(options.reduction != Reduction::kNone,
             "{}: reduction {} is not supported (expected mean or sum)", kOp,
             reduction_name(options.reduction));
  ROTA_CHECK(options.label_smoothing >= 0.0 && options.label_smoothing <= 1.0,
             "{}: label_smoothing {} is outside [0, 1]", kOp, options.label_smoothing);
  ROTA_CHECK(options.tile_rows >= 0, "{}: tile_rows {} is negative", kOp, options.tile_rows);
  return layout;
}

// The rows whose target is not ignore_index, and their targets; every such target must be in
// [0, V). Checked serially before any parallel work so an error never escapes an OpenMP region.
struct ValidRows {
  std::vector<int64_t> index;   // [Rv] row numbers in hidden
  std::vector<int64_t> target;  // [Rv]
};

ValidRows valid_rows(const Tensor& targets, const Layout& layout, int64_t ignore_index) {
  const Tensor t = targets.to(DType::kI64).contiguous();
  const int64_t* pt = t.data<int64_t>();
  ValidRows valid;
  for (int64_t r = 0; r < layout.rows; ++r) {
    if (pt[r] == ignore_index) continue;
    ROTA_CHECK(pt[r] >= 0 && pt[r] < layout.vocab,
               "{}: target {} at row {} is out of range for {} classes (ignore_index {})", kOp,
               pt[r], r, layout.vocab, ignore_index);
    valid.index.push_back(r);
    valid.target.push_back(pt[r]);
  }
  return valid;
}

// rows: contiguous [R, E] (any dtype) → [n, E] holding rows index[0..n).
Tensor gather_rows(const Tensor& rows, const std::vector<int64_t>& index) {
  const int64_t n = static_cast<int64_t>(index.size());
  const int64_t embed = rows.size(1);
  Tensor out = Tensor::empty({n, embed}, rows.dtype());
  const size_t row_bytes = static_cast<size_t>(embed) * dtype_size(rows.dtype());
  const char* src = static_cast<const char*>(rows.raw_data());
  char* dst = static_cast<char*>(out.raw_data());
  parallel_for(n, embed, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      std::memcpy(dst + i * row_bytes, src + index[i] * row_bytes, row_bytes);
    }
  });
  return out;
}

// dst: contiguous [R, E] (zeros) ← rows of src: [n, E] at dst rows index[0..n).
void scatter_rows(const Tensor& src, const std::vector<int64_t>& index, const Tensor& dst) {
  const int64_t n = static_cast<int64_t>(index.size());
  const int64_t embed = src.size(1);
  const size_t row_bytes = static_cast<size_t>(embed) * dtype_size(src.dtype());
  const char* from = static_cast<const char*>(src.raw_data());
  char* to = static_cast<char*>(dst.raw_data());
  parallel_for(n, embed, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      std::memcpy(to + index[i] * row_bytes, from + i * row_bytes, row_bytes);
    }
  });
}

// Bits of x rounded to bf16 as float_to_bf16 (framework/tensor/dtype.h) rounds it: to nearest
// even, NaN kept quiet. Written with integer selects so that the loops calling it vectorise.
inline uint16_t bf16_bits(float x) {
  const uint32_t u = std::bit_cast<uint32_t>(x);
  const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const uint32_t quiet_nan = (u >> 16) | 0x40u;
  return static_cast<uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
}

// x rounded to bf16, as an f32 value.
inline float bf16_value(float x) {
  return std::bit_cast<float>(static_cast<uint32_t>(bf16_bits(x)) << 16);
}

// Where the softmax pass writes the bf16 rounding of a dlogits tile: bf16 elements, f32
// elements holding the rounded values (the portable path), or nowhere.
struct RoundedTile {
  uint16_t* bf16 = nullptr;
  float* f32 = nullptr;
};

// One tile of the softmax pass: the logits, the targets and where the results go.
template <typename T>
struct TileArgs {
  T* z = nullptr;              // [n, V] logits, overwritten by dz when gradients (see below)
  const int64_t* t = nullptr;  // [n] targets
  double* row_loss = nullptr;  // [n]
  RoundedTile rounded;         // [n, V] bf16 rounding of dz, when wanted
  int64_t classes = 0;         // V
  double smoothing = 0.0;      // ε
  bool gradients = false;      // write dz
  bool keep_unrounded = true;  // with a rounded tile, also leave dz in z (for the bias)
  T scale = 1;                 // s: 1/Rv (kMean) or 1 (kSum)
  T uniform = 0;               // ε/V
  T on_target = 1;             // 1-ε
};

// Terms of Σ exp summed in the working precision before the double total (see softmax_rows).
constexpr int64_t kExpSumChunk = 256;

template <typename T>
inline T exp_kernel(T x) {
  if constexpr (std::is_same_v<T, float>) {
    // Vectorisable; results below FLT_MIN are 0 whether or not the thread flushes subnormals.
    return vecmath::exp_flush_to_zero(x);
  } else {
    return std::exp(x);  // f64 keeps libm so gradients check to double precision
  }
}

// One row's gradient: write(c, dz_c) for every class c, dz_c = (e_c·inv_sum − ε/V)·s with
// e_c = exp(z_c − m) held in zr, then write(target, dz_target) (the target's own formula).
template <typename T, typename Write>
inline void write_dz(const T* zr, int64_t classes, T inv_sum, T uniform, T scale, int64_t target,
                     T dz_target, Write write) {
#pragma omp simd
  for (int64_t c = 0; c < classes; ++c) write(c, (zr[c] * inv_sum - uniform) * scale);
  write(target, dz_target);
}

// A row's dz rounded into out (out[c] = round(dz_c)), and also left unrounded in zr when
// keep_unrounded (the bias gradient sums it).
template <typename Out, typename Round>
inline void write_rounded_dz(float* zr, Out* out, bool keep_unrounded, int64_t classes,
                             float inv_sum, float uniform, float scale, int64_t target,
                             float dz_target, Round round) {
  if (!keep_unrounded) {
    write_dz(zr, classes, inv_sum, uniform, scale, target, dz_target,
             [&](int64_t c, float dz) { out[c] = round(dz); });
  } else {
    write_dz(zr, classes, inv_sum, uniform, scale, target, dz_target, [&](int64_t c, float dz) {
      zr[c] = dz;
      out[c] = round(dz);
    });
  }
}

// Rows [begin, end) of a tile:
//   lse = m + log Σ_c exp(z_c - m),  m = max_c z_c (max subtracted: no overflow)
//   loss = (1-ε)·(lse - z_t) + ε·(lse - Σ_c z_c / V)
//   dz_c = (exp(z_c - lse) - ε/V)·s,  dz_t -= (1-ε)·s   (cross_entropy_backward's formula,
//   with exp(z_c - lse) as exp(z_c - m) / Σ)
// A NaN logit makes its row's lse, loss and gradient NaN (exp propagates it into the sum).
template <typename T>
inline void softmax_rows(const TileArgs<T>& a, int64_t begin, int64_t end) {
  const int64_t classes = a.classes;
  for (int64_t r = begin; r < end; ++r) {
    T* zr = a.z + r * classes;
    const int64_t target = a.t[r];
    T m = -std::numeric_limits<T>::infinity();
#pragma omp simd reduction(max : m)
    for (int64_t c = 0; c < classes; ++c) m = zr[c] > m ? zr[c] : m;
    const double z_target = static_cast<double>(zr[target]);
    double sum_z = 0;
    if (a.smoothing > 0.0) {
#pragma omp simd reduction(+ : sum_z)
      for (int64_t c = 0; c < classes; ++c) sum_z += static_cast<double>(zr[c]);
    }
    // Σ exp: chunks of kExpSumChunk terms summed in T (per-lane partials of a few terms, so f32
    // chunk sums are within a few ulps), chunk sums added in double, so vocab-sized sums stay
    // accurate to f32 precision without converting every term to double in the vector loop.
    double sum_exp = 0;
    for (int64_t c0 = 0; c0 < classes; c0 += kExpSumChunk) {
      const int64_t c1 = std::min(classes, c0 + kExpSumChunk);
      T chunk_sum = 0;
#pragma omp simd reduction(+ : chunk_sum)
      for (int64_t c = c0; c < c1; ++c) {
        const T e = exp_kernel<T>(zr[c] - m);
        zr[c] = e;
        chunk_sum += e;
      }
      sum_exp += static_cast<double>(chunk_sum);
    }
    const double lse = static_cast<double>(m) + std::log(sum_exp);
    double loss = (1.0 - a.smoothing) * (lse - z_target);
    if (a.smoothing > 0.0) loss += a.smoothing * (lse - sum_z / static_cast<double>(classes));
    a.row_loss[r] = loss;
    if (!a.gradients) continue;

    const T inv_sum = static_cast<T>(1.0 / sum_exp);
    const T scale = a.scale;
    const T uniform = a.uniform;
    const T dz_target = (zr[target] * inv_sum - uniform) * scale - a.on_target * scale;
    if constexpr (std::is_same_v<T, float>) {
      // One pass writes dz and its rounding.
      if (a.rounded.bf16 != nullptr) {
        write_rounded_dz(zr, a.rounded.bf16 + r * classes, a.keep_unrounded, classes, inv_sum,
                         uniform, scale, target, dz_target, [](float dz) { return bf16_bits(dz); });
        continue;
      }
      if (a.rounded.f32 != nullptr) {
        write_rounded_dz(zr, a.rounded.f32 + r * classes, a.keep_unrounded, classes, inv_sum,
                         uniform, scale, target, dz_target,
                         [](float dz) { return bf16_value(dz); });
        continue;
      }
    }
    write_dz(zr, classes, inv_sum, uniform, scale, target, dz_target,
             [&](int64_t c, T dz) { zr[c] = dz; });
  }
}

// The f32 rows built for vecmath::best_isa() (which honours ROTA_MAX_CPU_ISA), chosen once (as
// in vector_math.cpp: the build's target sets the vector width, `flatten` inlines the row code
// and vecmath's exp into it).
using F32Rows = void (*)(const TileArgs<float>&, int64_t, int64_t);

F32Rows f32_rows() {
  static const F32Rows chosen = vecmath::build_of<&softmax_rows<float>>(vecmath::best_isa());
  return chosen;
}

// The softmax pass over a tile of n rows, rows split across threads.
template <typename T>
void softmax_tile(const TileArgs<T>& args, int64_t n) {
  parallel_for(n, args.classes * kCostPerLogit, [&](int64_t begin, int64_t end) {
    if constexpr (std::is_same_v<T, float>) {
      f32_rows()(args, begin, end);
    } else {
      softmax_rows<T>(args, begin, end);
    }
  });
}

// sums[c] += Σ_r dz[r, c] over a tile dz: [n, V]; columns split across threads, rows summed
// in order (the result does not depend on the thread count).
template <typename T>
void add_column_sums(const T* dz, int64_t n, int64_t classes, double* sums) {
  parallel_for(classes, n, [&](int64_t begin, int64_t end) {
    for (int64_t r = 0; r < n; ++r) {
      const T* row = dz + r * classes;
#pragma omp simd
      for (int64_t c = begin; c < end; ++c) sums[c] += static_cast<double>(row[c]);
    }
  });
}

}  // namespace

LinearCrossEntropyResult linear_cross_entropy(const Tensor& hidden, const Tensor& weight,
                                              const Tensor& bias, const Tensor& targets,
                                              const LinearCrossEntropyOptions& options) {
  const Layout layout = check_inputs(hidden, weight, bias, targets, options);
  const ValidRows valid = valid_rows(targets, layout, options.ignore_index);
  const int64_t rv = static_cast<int64_t>(valid.index.size());
  const int64_t embed = layout.embed;
  const int64_t vocab = layout.vocab;
  LinearCrossEntropyResult out;
  out.valid_rows = rv;

  // The rows to process: all of hidden, or a compact copy of the valid ones (an MLM batch
  // scores ~15% of its rows; ignored rows need neither logits nor gradients).
  const Tensor hidden_rows = hidden.reshape({layout.rows, embed});
  const bool compact = rv < layout.rows;
  const Tensor rows = compact ? gather_rows(hidden_rows.contiguous(), valid.index) : hidden_rows;

  const bool grad_bias = options.grad_bias && bias.defined();
  const bool gradients = options.grad_hidden || options.grad_weight || grad_bias;
  Tensor grad_rows = options.grad_hidden ? zeros({rv, embed}, layout.result) : Tensor();
  if (options.grad_weight) out.grad_weight = zeros({vocab, embed}, layout.result);
  std::vector<double> bias_sums(grad_bias ? vocab : 0, 0.0);
  std::vector<double> row_loss(rv, 0.0);

  const bool bf16_operands = hidden.dtype() == DType::kBF16;
  const bool round_dlogits = gradients && (bf16_operands || options.round_dlogits_to_bf16);
  const int64_t tile_rows = options.tile_rows > 0 ? options.tile_rows : kLinearCrossEntropyTileRows;
  // Rounded dz tiles are kept for a group of tiles and the weight gradient is formed over the
  // whole group (its product then reads and writes the [V, E] gradient once per group, not once
  // per tile). Unrounded dz is the logits tile itself: one product per tile.
  const int64_t wanted_group = options.weight_gradient_rows > 0
                                   ? options.weight_gradient_rows
                                   : kLinearCrossEntropyWeightGradientRows;
  const int64_t group_rows =
      round_dlogits && options.grad_weight
          ? std::max<int64_t>(1, (wanted_group + tile_rows - 1) / tile_rows) * tile_rows
          : tile_rows;
  Tensor rounded_group;  // [min(group rows, Rv), V]: rounded dz of the current group
  if (round_dlogits) {
    rounded_group = Tensor::empty({std::min(group_rows, rv), vocab},
                                  bf16_operands ? DType::kBF16 : DType::kF32);
  }

  dispatch_floating(layout.result, kOp, [&](auto tag) {
    using T = decltype(tag);
    TileArgs<T> args;
    args.classes = vocab;
    args.smoothing = options.label_smoothing;
    args.gradients = gradients;
    args.keep_unrounded = !round_dlogits || grad_bias;
    // The constants cross_entropy_backward uses for an incoming gradient of 1, cast the same
    // way, so that fused and composed dlogits differ only in the exp's rounding.
    args.scale = static_cast<T>(options.reduction == Reduction::kMean
                                    ? 1.0 / static_cast<double>(std::max<int64_t>(rv, 1))
                                    : 1.0);
    args.uniform = static_cast<T>(options.label_smoothing / static_cast<double>(vocab));
    args.on_target = static_cast<T>(1.0 - options.label_smoothing);

    for (int64_t r0 = 0; r0 < rv; r0 += tile_rows) {
      const int64_t n = std::min(tile_rows, rv - r0);
      const Tensor hidden_tile = rows.narrow(0, r0, n);         // [n, E]
      const Tensor logits = linear(hidden_tile, weight, bias);  // [n, V], becomes dz
      const int64_t group_start = r0 - r0 % group_rows;
      Tensor rounded_tile;  // [n, V]: bf16 rounding of dz for the two products (in the group)
      args.rounded = RoundedTile{};
      if (round_dlogits) {
        rounded_tile = rounded_group.narrow(0, r0 - group_start, n);
        if (bf16_operands) {
          args.rounded.bf16 = static_cast<uint16_t*>(rounded_tile.raw_data());
        } else {
          args.rounded.f32 = rounded_tile.data<float>();
        }
      }
      args.z = logits.data<T>();
      args.t = valid.target.data() + r0;
      args.row_loss = row_loss.data() + r0;
      softmax_tile<T>(args, n);
      if (!gradients) continue;
      const Tensor& dz = round_dlogits ? rounded_tile : logits;
      // grad_hidden_tile = dz·weight: [n, E]; grad_weight += dzᵀ·hidden_tile: [V, E].
      if (options.grad_hidden) matmul_accumulate(grad_rows.narrow(0, r0, n), dz, weight);
      const int64_t group_end = std::min(group_start + group_rows, rv);
      if (options.grad_weight && !round_dlogits) {
        matmul_accumulate(out.grad_weight, dz, hidden_tile, /*transpose_a=*/true);
      } else if (options.grad_weight && r0 + n == group_end) {
        const int64_t k = group_end - group_start;
        matmul_accumulate(out.grad_weight, rounded_group.narrow(0, 0, k),
                          rows.narrow(0, group_start, k), /*transpose_a=*/true);
      }
      // The bias gradient sums the unrounded dz, as the composed ops do.
      if (grad_bias) add_column_sums(logits.data<T>(), n, vocab, bias_sums.data());
    }
  });

  // Rows are summed serially in double: independent of the thread count and the tiling.
  double total = 0.0;
  for (double v : row_loss) total += v;
  if (options.reduction == Reduction::kMean) {
    // 0 / 0 = NaN when every row is ignored, as in PyTorch.
    total = rv > 0 ? total / static_cast<double>(rv) : std::numeric_limits<double>::quiet_NaN();
  }
  out.loss = scalar_tensor(total, layout.result);

  if (options.grad_hidden) {
    if (compact) {
      Tensor full = zeros({layout.rows, embed}, layout.result);
      scatter_rows(grad_rows, valid.index, full);
      grad_rows = full;
    }
    out.grad_hidden = grad_rows.view(hidden.shape());
  }
  if (grad_bias) out.grad_bias = tensor_from(bias_sums, {vocab}, layout.result);
  return out;
}

}  // namespace rota::backend
