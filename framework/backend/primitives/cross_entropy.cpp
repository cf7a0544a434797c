// Cross-entropy kernels: per-row logsumexp and loss; the backward recomputes the softmax.
#include "framework/backend/primitives/cross_entropy.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "framework/backend/cpu/dispatch.h"
#include "framework/backend/cpu/parallel.h"
#include "framework/backend/cpu/vector_math.h"

namespace rota::backend {

const char* reduction_name(Reduction reduction) {
  switch (reduction) {
    case Reduction::kNone:
      return "none";
    case Reduction::kMean:
      return "mean";
    case Reduction::kSum:
      return "sum";
  }
  return "?";
}

namespace {

// One exp per logit in each direction.
constexpr int64_t kCostPerLogit = 8;

// e^x for f32 written in plain arithmetic so that the loops calling it vectorise: libm's expf
// is an opaque call (GCC has no SIMD variant of it without -ffast-math), which kept these
// loops scalar at ~3 ns per logit. Cephes expf: x = n·ln2 + r with |r| <= ln2/2, e^r from a
// degree-6 polynomial (vecmath's exp_reduce and exp_poly), 2^n assembled directly in the
// exponent bits. Relative error < 1.5e-7 (about 2 ulp) on [-87, 88].
// Inputs below -87 (including -inf, e.g. masked logits) are clamped to -87, giving 1.6e-38
// instead of 0: nothing a softmax can tell apart. The clamp is an unsigned min on the bit
// pattern (for negative floats a larger magnitude has larger bits) because a floating-point
// compare-and-select against a constant lets GCC fold the clamped branch into a constant and
// then refuse to vectorise the remaining conditional arithmetic. The same min maps NaNs with
// the sign bit set to -87, so callers propagate NaN rows themselves. Only f32 uses it: f64
// keeps std::exp so gradients check to double precision.
inline float exp_f32(float x) {
  constexpr uint32_t kMagicBits = 0x4b400000u;  // bit pattern of vecmath::kRoundToInt
  const float clamped =
      std::bit_cast<float>(std::min(std::bit_cast<uint32_t>(x), std::bit_cast<uint32_t>(-87.0f)));
  // shifted holds n = round(x·log2 e) in its low mantissa bits: n = bits - kMagicBits.
  const float shifted = clamped * vecmath::kLog2e + vecmath::kRoundToInt;
  const float n = shifted - vecmath::kRoundToInt;
  const float r = vecmath::exp_reduce(clamped, n);
  const float p = vecmath::exp_poly(r) * r * r + r + 1.0f;
  const uint32_t exponent = std::bit_cast<uint32_t>(shifted) - kMagicBits + 127u;  // 1..254
  return p * std::bit_cast<float>(exponent << 23);
}

template <typename T>
inline T exp_kernel(T x) {
  if constexpr (std::is_same_v<T, float>) {
    return exp_f32(x);
  } else {
    return std::exp(x);
  }
}

struct RowLayout {
  int64_t rows = 0;
  int64_t classes = 0;
};

// Validates shapes, dtypes and options (everything but the target values).
RowLayout check_inputs(const char* op, const Tensor& logits, const Tensor& targets,
                       const CrossEntropyOptions& options) {
  ROTA_CHECK(logits.defined() && targets.defined(), "{}: logits or targets are undefined", op);
  ROTA_CHECK(logits.dim() >= 1, "{}: logits {} need a class dim", op, shape_str(logits.shape()));
  ROTA_CHECK(targets.dtype() == DType::kI32 || targets.dtype() == DType::kI64,
             "{}: targets dtype {} is not an index type (expected i32 or i64)", op,
             dtype_name(targets.dtype()));
  const Shape lead(logits.shape().begin(), logits.shape().end() - 1);
  ROTA_CHECK(targets.shape() == lead, "{}: logits {} need targets {}, got {}", op,
             shape_str(logits.shape()), shape_str(lead), shape_str(targets.shape()));
  ROTA_CHECK(options.label_smoothing >= 0.0 && options.label_smoothing <= 1.0,
             "{}: label_smoothing {} is outside [0, 1]", op, options.label_smoothing);
  RowLayout layout;
  layout.classes = logits.size(-1);
  layout.rows = shape_numel(lead);
  ROTA_CHECK(layout.classes > 0 || layout.rows == 0, "{}: logits {} have no classes", op,
             shape_str(logits.shape()));
  return layout;
}

// Targets as contiguous i64; every value must be in [0, C) or equal ignore_index.
// Checked serially before any parallel work so an error never escapes an OpenMP region.
Tensor checked_targets(const char* op, const Tensor& targets, const RowLayout& layout,
                       int64_t ignore_index, int64_t* valid_rows) {
  Tensor t = targets.to(DType::kI64).contiguous();
  const int64_t* pt = t.data<int64_t>();
  int64_t valid = 0;
  for (int64_t r = 0; r < layout.rows; ++r) {
    if (pt[r] == ignore_index) continue;
    ROTA_CHECK(pt[r] >= 0 && pt[r] < layout.classes,
               "{}: target {} at row {} is out of range for {} classes (ignore_index {})", op,
               pt[r], r, layout.classes, ignore_index);
    ++valid;
  }
  if (valid_rows) *valid_rows = valid;
  return t;
}

// Forward over rows. z: [R, C], t: [R] -> lse: [R], row_loss: [R] (0 for ignored rows).
//   lse = m + log Σ_c exp(z_c - m), m = max_c z_c  (max subtracted: no overflow)
//   loss = (1-ε)·(lse - z_t) + ε·(lse - Σ_c z_c / C)
template <typename T>
void cross_entropy_rows(const T* z, const int64_t* t, T* lse_out, double* row_loss, int64_t rows,
                        int64_t classes, int64_t ignore_index, double smoothing) {
  parallel_for(rows, classes * kCostPerLogit, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const T* zr = z + r * classes;
      T m = -std::numeric_limits<T>::infinity();
#pragma omp simd reduction(max : m)
      for (int64_t c = 0; c < classes; ++c) m = zr[c] > m ? zr[c] : m;
      // Σ exp accumulated in double: vocab-sized sums stay exact to f32 precision.
      double sum_exp = 0;
#pragma omp simd reduction(+ : sum_exp)
      for (int64_t c = 0; c < classes; ++c) sum_exp += exp_kernel<T>(zr[c] - m);
      // A NaN logit makes the row's lse (hence its loss and gradient) NaN, as in PyTorch; the
      // max above skips NaNs and exp_f32 may clamp them, so count them explicitly.
      int64_t nans = 0;
#pragma omp simd reduction(+ : nans)
      for (int64_t c = 0; c < classes; ++c) nans += zr[c] != zr[c];
      const double lse = nans > 0 ? std::numeric_limits<double>::quiet_NaN()
                                  : static_cast<double>(m) + std::log(sum_exp);
      lse_out[r] = static_cast<T>(lse);
      if (t[r] == ignore_index) {
        row_loss[r] = 0.0;
        continue;
      }
      double loss = (1.0 - smoothing) * (lse - static_cast<double>(zr[t[r]]));
      if (smoothing > 0.0) {
        double sum_z = 0;
#pragma omp simd reduction(+ : sum_z)
        for (int64_t c = 0; c < classes; ++c) sum_z += static_cast<double>(zr[c]);
        loss += smoothing * (lse - sum_z / static_cast<double>(classes));
      }
      row_loss[r] = loss;
    }
  });
}

// Backward over rows. z: [R, C], t, lse, g: [R] -> dz: [R, C].
//   dz_c = (exp(z_c - lse) - ε/C - (1-ε)·[c == t]) · g_r,  0 for ignored rows.
template <typename T>
void cross_entropy_backward_rows(const T* z, const int64_t* t, const T* lse, const T* g,
                                 int64_t g_stride, T* dz, int64_t rows, int64_t classes,
                                 int64_t ignore_index, double smoothing) {
  const T uniform = static_cast<T>(smoothing / static_cast<double>(classes));
  const T on_target = static_cast<T>(1.0 - smoothing);
  parallel_for(rows, classes * kCostPerLogit, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      T* dzr = dz + r * classes;
      if (t[r] == ignore_index) {
        std::fill(dzr, dzr + classes, T(0));
        continue;
      }
      const T* zr = z + r * classes;
      const T l = lse[r];
      const T gr = g[r * g_stride];
      if (std::isnan(l)) {  // the forward found a NaN logit in this row
        std::fill(dzr, dzr + classes, std::numeric_limits<T>::quiet_NaN());
        continue;
      }
#pragma omp simd
      for (int64_t c = 0; c < classes; ++c) dzr[c] = (exp_kernel<T>(zr[c] - l) - uniform) * gr;
      dzr[t[r]] -= on_target * gr;
    }
  });
}

}  // namespace

CrossEntropyForward cross_entropy_forward(const Tensor& logits_in, const Tensor& targets,
                                          const CrossEntropyOptions& options) {
  const char* op = "cross_entropy";
  const RowLayout layout = check_inputs(op, logits_in, targets, options);
  CrossEntropyForward out;
  const Tensor t = checked_targets(op, targets, layout, options.ignore_index, &out.valid_rows);
  const Tensor logits = logits_in.contiguous();
  out.logsumexp = Tensor::empty({layout.rows}, logits.dtype());
  std::vector<double> row_loss(layout.rows);
  dispatch_floating(logits.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    cross_entropy_rows<T>(logits.data<T>(), t.data<int64_t>(), out.logsumexp.data<T>(),
                          row_loss.data(), layout.rows, layout.classes, options.ignore_index,
                          options.label_smoothing);
  });
  if (options.reduction == Reduction::kNone) {
    out.loss = tensor_from(row_loss, targets.shape(), logits.dtype());
    return out;
  }
  // Rows are summed serially in double: R values only, and the result is independent of the
  // thread count.
  double total = 0.0;
  for (double v : row_loss) total += v;
  if (options.reduction == Reduction::kMean) {
    // 0 / 0 = NaN when every row is ignored, as in PyTorch.
    total = out.valid_rows > 0 ? total / static_cast<double>(out.valid_rows)
                               : std::numeric_limits<double>::quiet_NaN();
  }
  out.loss = scalar_tensor(total, logits.dtype());
  return out;
}

Tensor cross_entropy_backward(const Tensor& grad_loss, const Tensor& logits_in,
                              const Tensor& targets, const Tensor& logsumexp, int64_t valid_rows,
                              const CrossEntropyOptions& options) {
  const char* op = "cross_entropy_backward";
  const RowLayout layout = check_inputs(op, logits_in, targets, options);
  const Shape grad_shape = options.reduction == Reduction::kNone ? targets.shape() : Shape{};
  ROTA_CHECK(grad_loss.numel() == shape_numel(grad_shape) && grad_loss.dtype() == logits_in.dtype(),
             "{}: grad {} {} does not match the loss {} {} (reduction {})", op,
             dtype_name(grad_loss.dtype()), shape_str(grad_loss.shape()),
             dtype_name(logits_in.dtype()), shape_str(grad_shape),
             reduction_name(options.reduction));
  ROTA_CHECK(logsumexp.shape() == Shape{layout.rows} && logsumexp.dtype() == logits_in.dtype(),
             "{}: saved logsumexp {} does not match logits {}", op, shape_str(logsumexp.shape()),
             shape_str(logits_in.shape()));
  const Tensor t = checked_targets(op, targets, layout, options.ignore_index, nullptr);
  const Tensor logits = logits_in.contiguous();
  const Tensor lse = logsumexp.contiguous();
  Tensor dlogits = Tensor::empty(logits.shape(), logits.dtype());
  dispatch_floating(logits.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    // One upstream gradient per row (kNone), or one scalar shared by all rows (stride 0).
    Tensor g = grad_loss.contiguous();
    int64_t g_stride = 1;
    if (options.reduction != Reduction::kNone) {
      double scale = grad_loss.item();
      if (options.reduction == Reduction::kMean) scale /= static_cast<double>(valid_rows);
      g = scalar_tensor(scale, logits.dtype());
      g_stride = 0;
    }
    cross_entropy_backward_rows<T>(logits.data<T>(), t.data<int64_t>(), lse.data<T>(), g.data<T>(),
                                   g_stride, dlogits.data<T>(), layout.rows, layout.classes,
                                   options.ignore_index, options.label_smoothing);
  });
  return dlogits;
}

}  // namespace rota::backend
