// Reduction kernels: data is viewed as [outer, inner, post] with the reduced dims as `inner`;
// rows (post == 1) reduce with one vectorised loop, columns (post > 1) accumulate whole rows.
#include "framework/backend/primitives/reduce.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <type_traits>

#include "framework/backend/cpu/dispatch.h"
#include "framework/backend/cpu/parallel.h"
#include "framework/backend/cpu/vector_math.h"

namespace rota::backend {

namespace {

// Column kernels work on blocks of this many adjacent outputs: the block of accumulators stays
// in L1 while the rows stream past, and [N, D] -> [D] (bias gradients) still splits into
// D / kColumnBlock independent tasks for the threads.
constexpr int64_t kColumnBlock = 128;
// Rough cost of one exp relative to an add, so exp-heavy rows fork threads sooner.
constexpr int64_t kExpCost = 8;

void check_floating(const Tensor& x, const char* op) {
  ROTA_CHECK(x.defined(), "{}: tensor is undefined", op);
  ROTA_CHECK(x.dtype() == DType::kF32 || x.dtype() == DType::kF64,
             "{}: dtype {} of shape {} is not supported (expected f32 or f64)", op,
             dtype_name(x.dtype()), shape_str(x.shape()));
}

int64_t checked_axis(int64_t axis, const Shape& shape, const char* op) {
  const int64_t nd = static_cast<int64_t>(shape.size());
  ROTA_CHECK(axis >= -nd && axis < nd, "{}: axis {} out of range for shape {}", op, axis,
             shape_str(shape));
  return axis < 0 ? axis + nd : axis;
}

// Normalised, sorted reduction axes (empty = all axes); errors name the op and the shape.
std::vector<int64_t> checked_axes(const std::vector<int64_t>& axes, const Shape& shape,
                                  const char* op) {
  std::vector<int64_t> out;
  if (axes.empty()) {
    for (int64_t i = 0; i < static_cast<int64_t>(shape.size()); ++i) out.push_back(i);
    return out;
  }
  for (int64_t a : axes) out.push_back(checked_axis(a, shape, op));
  std::sort(out.begin(), out.end());
  ROTA_CHECK(std::adjacent_find(out.begin(), out.end()) == out.end(),
             "{}: repeated axis in {} for shape {}", op, shape_str(axes), shape_str(shape));
  return out;
}

int64_t product(const Shape& shape, int64_t begin, int64_t end) {
  int64_t n = 1;
  for (int64_t i = begin; i < end; ++i) n *= shape[i];
  return n;
}

// A contiguous tensor of `shape` read as [outer, inner, post], inner = the reduced dims.
struct Run {
  int64_t outer = 1;
  int64_t inner = 1;
  int64_t post = 1;
};

// The [outer, inner, post] split when the reduced dims of size > 1 are adjacent (size-1 dims
// may sit anywhere: they change no offsets); nullopt when they are not.
std::optional<Run> adjacent_run(const Shape& shape, const std::vector<int64_t>& axes) {
  const int64_t nd = static_cast<int64_t>(shape.size());
  std::vector<bool> reduced(nd, false);
  for (int64_t a : axes) reduced[a] = true;
  int64_t first = -1;
  int64_t last = -1;
  for (int64_t i = 0; i < nd; ++i) {
    if (reduced[i] && shape[i] != 1) {
      if (first < 0) first = i;
      last = i;
    }
  }
  if (first < 0) return Run{shape_numel(shape), 1, 1};  // every output reads one element
  for (int64_t i = first; i <= last; ++i) {
    if (!reduced[i] && shape[i] != 1) return std::nullopt;
  }
  return Run{product(shape, 0, first), product(shape, first, last + 1),
             product(shape, last + 1, nd)};
}

// The permutation move_axes_last applies: kept dims in order, then `axes` in the given order.
std::vector<int64_t> axes_last_order(int64_t ndim, const std::vector<int64_t>& axes) {
  std::vector<bool> moved(ndim, false);
  for (int64_t a : axes) moved[a] = true;
  std::vector<int64_t> order;
  for (int64_t i = 0; i < ndim; ++i) {
    if (!moved[i]) order.push_back(i);
  }
  for (int64_t a : axes) order.push_back(a);
  return order;
}

// x with `axes` moved last: rows[r * inner ...] are the elements reduced into output r.
struct Rows {
  Tensor data;                 // contiguous, shape = x's shape permuted by `order`
  std::vector<int64_t> order;  // the permutation applied
  int64_t outer = 1;
  int64_t inner = 1;
};

Rows rows_along(const Tensor& x, const std::vector<int64_t>& axes) {
  Rows rows;
  rows.order = axes_last_order(x.dim(), axes);
  rows.data = x.permute(rows.order).contiguous();
  for (int64_t a : axes) rows.inner *= x.size(a);
  rows.outer = rows.inner == 0 ? 0 : x.numel() / rows.inner;
  return rows;
}

// Undoes rows_along's permutation on a result laid out like Rows::data.
Tensor restore_axes(const Tensor& moved, const std::vector<int64_t>& order) {
  std::vector<int64_t> inverse(order.size());
  bool identity = true;
  for (size_t i = 0; i < order.size(); ++i) {
    inverse[order[i]] = static_cast<int64_t>(i);
    identity = identity && order[i] == static_cast<int64_t>(i);
  }
  if (identity) return moved;
  return moved.permute(inverse).contiguous();
}

// exp for the kernels below: vecmath's vectorisable float version (glibc's expf is a scalar
// call, and the exp pass dominates softmax: f32 softmax rows 3.0 -> 1.3 ns per element with
// SSE2 code), 0 where the result would be subnormal, so that softmax does not depend on the
// thread's FTZ mode; std::exp for double (the f64 path is the precise reference that gradient
// checks run in).
template <typename T>
inline T exp_of(T x) {
  if constexpr (std::is_same_v<T, float>) {
    return vecmath::exp_flush_to_zero(x);
  } else {
    return std::exp(x);
  }
}

// Calls f(r) for every row r in [0, rows), in parallel when rows * cost_per_row is large.
template <typename F>
void for_each_row(int64_t rows, int64_t cost_per_row, F&& f) {
  parallel_for(rows, std::max<int64_t>(cost_per_row, 1), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) f(r);
  });
}

// ---- row kernels: x: [n] contiguous ----

// sum_i x[i], returned in double. Each chunk of kSumChunk elements is summed in T (the simd
// reduction keeps one partial sum per lane) and the chunk sums are added in double, so float
// rounding error grows with the chunk length rather than with n.
template <typename T>
double row_sum(const T* x, int64_t n) {
  double total = 0;
  for (int64_t begin = 0; begin < n; begin += kSumChunk) {
    const int64_t end = std::min(n, begin + kSumChunk);
    T acc = 0;
#pragma omp simd reduction(+ : acc)
    for (int64_t i = begin; i < end; ++i) acc += x[i];
    total += acc;
  }
  return total;
}

// max_i x[i], NaN if any x[i] is NaN. NaNs are counted separately so the max itself stays a
// plain vectorisable reduction.
template <typename T>
T row_max(const T* x, int64_t n) {
  T best = -std::numeric_limits<T>::infinity();
  int64_t nans = 0;
#pragma omp simd reduction(max : best) reduction(+ : nans)
  for (int64_t i = 0; i < n; ++i) {
    best = x[i] > best ? x[i] : best;
    nans += x[i] != x[i];
  }
  return nans ? std::numeric_limits<T>::quiet_NaN() : best;
}

// sum_i exp(x[i] - m) in T (an omp simd reduction), each exp also written to e[i] when kStore.
// Always inlined, as the loops were when each caller wrote its own.
template <bool kStore, typename T>
[[gnu::always_inline]] inline T exp_sum(const T* x, T m, int64_t n, T* e = nullptr) {
  T sum = 0;
#pragma omp simd reduction(+ : sum)
  for (int64_t i = 0; i < n; ++i) {
    const T v = exp_of(x[i] - m);
    if constexpr (kStore) e[i] = v;
    sum += v;
  }
  return sum;
}

// m + log(sum_i exp(x[i] - m)), m = max_i x[i]. An infinite m is the answer itself (all -inf
// gives -inf instead of -inf - -inf = NaN).
template <typename T>
T row_logsumexp(const T* x, int64_t n) {
  const T m = row_max(x, n);
  if (std::isinf(m) || std::isnan(m)) return m;
  return m + std::log(exp_sum<false>(x, m, n));
}

// ---- column kernels: x: [outer, inner, post] contiguous -> out: [outer, post] ----

// acc = max(acc, x) element-wise; a NaN on either side wins.
struct MaxInto {
  template <typename T>
  void operator()(T* acc, const T* x, int64_t n) const {
#pragma omp simd
    for (int64_t p = 0; p < n; ++p) acc[p] = (x[p] > acc[p] || x[p] != x[p]) ? x[p] : acc[p];
  }
};

// Splits [outer, post] outputs into tasks of up to kColumnBlock adjacent outputs and calls
// f(src, dst, n) for each: src = &x[o, 0, p0] (rows run.post apart), dst = &out[o, p0].
template <typename T, typename F>
void for_each_column_block(const T* x, T* out, const Run& run, F&& f) {
  const int64_t blocks = (run.post + kColumnBlock - 1) / kColumnBlock;
  parallel_for(run.outer * blocks, run.inner * kColumnBlock, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t o = t / blocks;
      const int64_t p0 = (t % blocks) * kColumnBlock;
      f(x + o * run.inner * run.post + p0, out + o * run.post + p0,
        std::min(kColumnBlock, run.post - p0));
    }
  });
}

// out[o, p] = scale * sum_r x[o, r, p]. Rows are added into a block of T partial sums (one
// vectorised add per row); every kSumChunk rows the partials move into double totals, so long
// f32 column sums (bias gradients over B*T rows) do not drift.
template <typename T>
void sum_columns(const T* x, T* out, const Run& run, double scale) {
  for_each_column_block(x, out, run, [&](const T* src, T* dst, int64_t n) {
    double total[kColumnBlock];
    T partial[kColumnBlock];
    std::fill(total, total + n, 0.0);
    for (int64_t r0 = 0; r0 < run.inner; r0 += kSumChunk) {
      const int64_t r1 = std::min(run.inner, r0 + kSumChunk);
      std::copy(src + r0 * run.post, src + r0 * run.post + n, partial);
      for (int64_t r = r0 + 1; r < r1; ++r) {
        const T* row = src + r * run.post;
#pragma omp simd
        for (int64_t p = 0; p < n; ++p) partial[p] += row[p];
      }
#pragma omp simd
      for (int64_t p = 0; p < n; ++p) total[p] += partial[p];
    }
#pragma omp simd
    for (int64_t p = 0; p < n; ++p) dst[p] = static_cast<T>(total[p] * scale);
  });
}

// out[o, p] = max_r x[o, r, p] (inner >= 1).
template <typename T>
void max_columns(const T* x, T* out, const Run& run) {
  for_each_column_block(x, out, run, [&](const T* src, T* dst, int64_t n) {
    std::copy(src, src + n, dst);
    for (int64_t r = 1; r < run.inner; ++r) MaxInto{}(dst, src + r * run.post, n);
  });
}

enum class Reduction { kSum, kMean, kMax, kLogSumExp };

const char* reduction_name(Reduction kind) {
  switch (kind) {
    case Reduction::kSum:
      return "sum";
    case Reduction::kMean:
      return "mean";
    case Reduction::kMax:
      return "max";
    case Reduction::kLogSumExp:
      return "logsumexp";
  }
  return "?";
}

// Reductions of a tensor with no elements: every output reduces an empty set.
Tensor empty_reduction(const Tensor& x, const std::vector<int64_t>& axes, const Shape& out_shape,
                       Reduction kind) {
  switch (kind) {
    case Reduction::kSum:
      return zeros(out_shape, x.dtype());
    case Reduction::kMean:
      return full(out_shape, std::nan(""), x.dtype());
    case Reduction::kMax:
      ROTA_CHECK(shape_numel(out_shape) == 0,
                 "max: cannot take the max of an empty set (axes {} of shape {})", shape_str(axes),
                 shape_str(x.shape()));
      return Tensor::empty(out_shape, x.dtype());
    case Reduction::kLogSumExp:
      return full(out_shape, -std::numeric_limits<double>::infinity(), x.dtype());
  }
  return Tensor();
}

// x: any shape -> reduced_shape(x, axes, keepdim). Adjacent reduced dims are read in place
// (x.contiguous() is free for contiguous x); scattered ones are moved last first (one copy).
// logsumexp only has a row kernel, so it always reads rows.
Tensor reduce(const Tensor& x, const std::vector<int64_t>& axes_in, bool keepdim, Reduction kind) {
  const char* op = reduction_name(kind);
  check_floating(x, op);
  const std::vector<int64_t> axes = checked_axes(axes_in, x.shape(), op);
  const Shape out_shape = reduced_shape(x.shape(), axes, keepdim);
  if (x.numel() == 0) return empty_reduction(x, axes, out_shape, kind);

  Tensor src;
  Run run;
  const std::optional<Run> adjacent = adjacent_run(x.shape(), axes);
  if (adjacent && (adjacent->post == 1 || kind != Reduction::kLogSumExp)) {
    src = x.contiguous();
    run = *adjacent;
  } else {
    const Rows rows = rows_along(x, axes);
    src = rows.data;
    run = Run{rows.outer, rows.inner, 1};
  }

  Tensor out = Tensor::empty(out_shape, x.dtype());
  dispatch_floating(x.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    const T* px = src.data<T>();
    T* po = out.data<T>();
    const int64_t n = run.inner;
    const double scale = kind == Reduction::kMean ? 1.0 / static_cast<double>(n) : 1.0;
    if (run.post == 1) {
      switch (kind) {
        case Reduction::kSum:
        case Reduction::kMean:
          for_each_row(run.outer, n,
                       [&](int64_t r) { po[r] = static_cast<T>(row_sum(px + r * n, n) * scale); });
          break;
        case Reduction::kMax:
          for_each_row(run.outer, n, [&](int64_t r) { po[r] = row_max(px + r * n, n); });
          break;
        case Reduction::kLogSumExp:
          for_each_row(run.outer, n * kExpCost,
                       [&](int64_t r) { po[r] = row_logsumexp(px + r * n, n); });
          break;
      }
    } else if (kind == Reduction::kMax) {
      max_columns(px, po, run);
    } else {
      sum_columns(px, po, run, scale);
    }
  });
  return out;
}

// Checks that a reduction's output-shaped tensor (y or grad_y) matches x, axes and keepdim.
void check_reduced(const Tensor& t, const char* what, const Tensor& x,
                   const std::vector<int64_t>& axes, bool keepdim, const char* op) {
  const Shape expected = reduced_shape(x.shape(), axes, keepdim);
  ROTA_CHECK(t.defined() && t.shape() == expected && t.dtype() == x.dtype(),
             "{}: {} has shape {} but x {} reduced over axes {} (keepdim {}) gives {}", op, what,
             t.defined() ? shape_str(t.shape()) : "undefined", shape_str(x.shape()),
             shape_str(axes), keepdim, shape_str(expected));
}

}  // namespace

Tensor move_axes_last(const Tensor& x, const std::vector<int64_t>& axes) {
  std::vector<int64_t> normalized;
  for (int64_t a : axes) normalized.push_back(checked_axis(a, x.shape(), "move_axes_last"));
  return x.permute(axes_last_order(x.dim(), normalized)).contiguous();
}

Tensor reduce_sum(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim) {
  return reduce(x, axes, keepdim, Reduction::kSum);
}

Tensor reduce_mean(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim) {
  return reduce(x, axes, keepdim, Reduction::kMean);
}

Tensor reduce_max(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim) {
  return reduce(x, axes, keepdim, Reduction::kMax);
}

Tensor logsumexp(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim) {
  return reduce(x, axes, keepdim, Reduction::kLogSumExp);
}

// grad: reduced shape -> out: `shape`. out[o, r, p] = scale * grad[o, p] when the reduced dims
// are adjacent; otherwise a broadcasting copy of grad followed by the scale.
Tensor expand_reduced(const Tensor& grad_in, const Shape& shape,
                      const std::vector<int64_t>& axes_in, bool keepdim, double scale) {
  const char* op = "expand_reduced";
  check_floating(grad_in, op);
  const std::vector<int64_t> axes = checked_axes(axes_in, shape, op);
  const Shape expected = reduced_shape(shape, axes, keepdim);
  ROTA_CHECK(grad_in.shape() == expected,
             "{}: grad has shape {} but {} reduced over axes {} (keepdim {}) gives {}", op,
             shape_str(grad_in.shape()), shape_str(shape), shape_str(axes), keepdim,
             shape_str(expected));
  Tensor out = Tensor::empty(shape, grad_in.dtype());
  if (out.numel() == 0) return out;
  const std::optional<Run> run = adjacent_run(shape, axes);
  if (!run) {
    out.copy_from(grad_in.reshape(reduced_shape(shape, axes, true)).expand(shape));
    if (scale != 1.0) {
      dispatch_floating(out.dtype(), op, [&](auto tag) {
        using T = decltype(tag);
        T* po = out.data<T>();
        const T s = static_cast<T>(scale);
        parallel_for(out.numel(), 1, [&](int64_t begin, int64_t end) {
#pragma omp simd
          for (int64_t i = begin; i < end; ++i) po[i] *= s;
        });
      });
    }
    return out;
  }
  const Tensor grad = grad_in.contiguous();
  dispatch_floating(out.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    const T* pg = grad.data<T>();
    T* po = out.data<T>();
    const T s = static_cast<T>(scale);
    const int64_t inner = run->inner;
    const int64_t post = run->post;
    if (post == 1) {
      // One output value fills a whole row of `inner` elements.
      for_each_row(run->outer, inner, [&](int64_t o) {
        const T v = s * pg[o];
        T* dst = po + o * inner;
#pragma omp simd
        for (int64_t i = 0; i < inner; ++i) dst[i] = v;
      });
    } else {
      // Every [o, r, :] row is a scaled copy of grad[o, :].
      for_each_row(run->outer * inner, post, [&](int64_t t) {
        const T* src = pg + (t / inner) * post;
        T* dst = po + t * post;
#pragma omp simd
        for (int64_t p = 0; p < post; ++p) dst[p] = s * src[p];
      });
    }
  });
  return out;
}

namespace {

// The frame of a reduction's backward: x: [outer, inner] (axes moved last), y, grad_y: [outer]
// (the reduction's output and its gradient) -> grad_x with x's shape. Calls
// row(x_r, y_r, g_r, gx_r, n) for every row r, in parallel by cost_per_element * n per row.
template <typename Row>
Tensor reduction_backward(const char* op, const Tensor& x, const Tensor& y, const Tensor& grad_y,
                          const std::vector<int64_t>& axes_in, bool keepdim,
                          int64_t cost_per_element, Row&& row) {
  check_floating(x, op);
  const std::vector<int64_t> axes = checked_axes(axes_in, x.shape(), op);
  check_reduced(y, "y", x, axes, keepdim, op);
  check_reduced(grad_y, "grad_y", x, axes, keepdim, op);
  if (x.numel() == 0) return Tensor::empty(x.shape(), x.dtype());
  const Rows rows = rows_along(x, axes);
  const Tensor yc = y.contiguous();
  const Tensor gc = grad_y.contiguous();
  Tensor out = Tensor::empty(rows.data.shape(), x.dtype());
  dispatch_floating(x.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    const T* px = rows.data.data<T>();
    const T* py = yc.data<T>();
    const T* pg = gc.data<T>();
    T* po = out.data<T>();
    const int64_t n = rows.inner;
    for_each_row(rows.outer, n * cost_per_element,
                 [&](int64_t r) { row(px + r * n, py[r], pg[r], po + r * n, n); });
  });
  return restore_axes(out, rows.order);
}

// The frame of softmax and log_softmax: x, y: [R, D] rows along `axis`. Calls row(x_r, y_r, n)
// for every row r, in parallel.
template <typename Row>
Tensor map_rows(const char* op, const Tensor& x, int64_t axis, Row&& row) {
  check_floating(x, op);
  const Rows rows = rows_along(x, {checked_axis(axis, x.shape(), op)});
  Tensor out = Tensor::empty(rows.data.shape(), x.dtype());
  dispatch_floating(x.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    const T* px = rows.data.data<T>();
    T* py = out.data<T>();
    const int64_t n = rows.inner;
    for_each_row(rows.outer, n * kExpCost, [&](int64_t r) { row(px + r * n, py + r * n, n); });
  });
  return restore_axes(out, rows.order);
}

// The frame of their backwards: y, grad_y, grad_x: [R, D] rows along `axis`. Calls
// row(y_r, g_r, gx_r, n) for every row r, in parallel by cost_per_element * n per row.
template <typename Row>
Tensor map_rows_backward(const char* op, const Tensor& y, const Tensor& grad_y, int64_t axis,
                         int64_t cost_per_element, Row&& row) {
  check_floating(y, op);
  ROTA_CHECK(grad_y.defined() && y.shape() == grad_y.shape() && y.dtype() == grad_y.dtype(),
             "{}: y {} {} and grad_y {} {} differ", op, dtype_name(y.dtype()), shape_str(y.shape()),
             grad_y.defined() ? dtype_name(grad_y.dtype()) : "undefined",
             shape_str(grad_y.shape()));
  const int64_t a = checked_axis(axis, y.shape(), op);
  const Rows yr = rows_along(y, {a});
  const Rows gr = rows_along(grad_y, {a});
  Tensor out = Tensor::empty(yr.data.shape(), y.dtype());
  dispatch_floating(y.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    const T* py = yr.data.data<T>();
    const T* pg = gr.data.data<T>();
    T* po = out.data<T>();
    const int64_t n = yr.inner;
    for_each_row(yr.outer, n * cost_per_element,
                 [&](int64_t r) { row(py + r * n, pg + r * n, po + r * n, n); });
  });
  return restore_axes(out, yr.order);
}

// The element type T of a row kernel's `T*` argument.
template <typename P>
using Elem = std::remove_cv_t<std::remove_pointer_t<P>>;

}  // namespace

// x: [outer, inner] (axes moved last), y, grad_y: [outer].
// grad_x[r, i] = [x[r, i] == y[r]] * grad_y[r] / count_r, count_r = #{i : x[r, i] == y[r]}.
// A NaN max matches nothing: its row's gradient is NaN.
Tensor reduce_max_backward(const Tensor& x, const Tensor& y, const Tensor& grad_y,
                           const std::vector<int64_t>& axes, bool keepdim) {
  return reduction_backward("max_backward", x, y, grad_y, axes, keepdim, 1,
                            [](const auto* xr, auto m, auto g, auto* gr, int64_t n) {
                              using T = Elem<decltype(gr)>;
                              int64_t ties = 0;
#pragma omp simd reduction(+ : ties)
                              for (int64_t i = 0; i < n; ++i) ties += xr[i] == m;
                              const T share = ties ? g / static_cast<T>(ties)
                                                   : std::numeric_limits<T>::quiet_NaN();
                              if (!ties) {
                                std::fill(gr, gr + n, share);
                                return;
                              }
#pragma omp simd
                              for (int64_t i = 0; i < n; ++i) gr[i] = xr[i] == m ? share : T(0);
                            });
}

// x: [outer, inner] (axes moved last), y, grad_y: [outer].
// grad_x[r, i] = grad_y[r] * exp(x[r, i] - y[r]), i.e. grad_y times softmax(x[r, :]).
Tensor logsumexp_backward(const Tensor& x, const Tensor& y, const Tensor& grad_y,
                          const std::vector<int64_t>& axes, bool keepdim) {
  return reduction_backward("logsumexp_backward", x, y, grad_y, axes, keepdim, kExpCost,
                            [](const auto* xr, auto lse, auto g, auto* gr, int64_t n) {
                              using T = Elem<decltype(gr)>;
                              if (lse == -std::numeric_limits<T>::infinity()) {
                                // Every x is -inf: the output does not move with x, and exp(-inf -
                                // -inf) would be NaN.
                                std::fill(gr, gr + n, T(0));
                                return;
                              }
#pragma omp simd
                              for (int64_t i = 0; i < n; ++i) gr[i] = g * exp_of(xr[i] - lse);
                            });
}

// x, y: [R, D] rows along `axis`. Three passes per row: max, exp and its sum (y holds the
// exps), scale by 1 / sum. Subtracting the max keeps exp <= 1, so large inputs cannot overflow.
Tensor softmax(const Tensor& x, int64_t axis) {
  return map_rows("softmax", x, axis, [](const auto* xr, auto* yr, int64_t n) {
    using T = Elem<decltype(yr)>;
    const T inv = T(1) / exp_sum<true>(xr, row_max(xr, n), n, yr);
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) yr[i] *= inv;
  });
}

// y, grad_y, grad_x: [R, D] rows along `axis`. grad_x = y * (grad_y - sum(grad_y * y)).
Tensor softmax_backward(const Tensor& y, const Tensor& grad_y, int64_t axis) {
  return map_rows_backward("softmax_backward", y, grad_y, axis, 1,
                           [](const auto* yrow, const auto* grow, auto* orow, int64_t n) {
                             using T = Elem<decltype(orow)>;
                             T dot = 0;
#pragma omp simd reduction(+ : dot)
                             for (int64_t i = 0; i < n; ++i) dot += grow[i] * yrow[i];
#pragma omp simd
                             for (int64_t i = 0; i < n; ++i) orow[i] = yrow[i] * (grow[i] - dot);
                           });
}

// x, y: [R, D] rows along `axis`. Three passes per row: max, sum of exp(x - max) (nothing
// written), y = (x - max) - log(sum).
Tensor log_softmax(const Tensor& x, int64_t axis) {
  return map_rows("log_softmax", x, axis, [](const auto* xr, auto* yr, int64_t n) {
    using T = Elem<decltype(yr)>;
    const T m = row_max(xr, n);
    // (x - m) - log(sum) rather than x - (m + log(sum)): x - m is exact for x near m, so the
    // result keeps full precision even when x is large (e.g. 1000 in f32).
    const T log_sum = std::log(exp_sum<false>(xr, m, n));
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) yr[i] = (xr[i] - m) - log_sum;
  });
}

// y, grad_y, grad_x: [R, D] rows along `axis`. grad_x = grad_y - exp(y) * sum(grad_y).
Tensor log_softmax_backward(const Tensor& y, const Tensor& grad_y, int64_t axis) {
  return map_rows_backward("log_softmax_backward", y, grad_y, axis, kExpCost,
                           [](const auto* yrow, const auto* grow, auto* orow, int64_t n) {
                             using T = Elem<decltype(orow)>;
                             const T gsum = static_cast<T>(row_sum(grow, n));
#pragma omp simd
                             for (int64_t i = 0; i < n; ++i)
                               orow[i] = grow[i] - exp_of(yrow[i]) * gsum;
                           });
}

namespace {

// One row of a scan: y[l] = sum of x[l'] over l' before l (exclusive) or up to l (inclusive),
// where "before" runs from the end when reverse. Accumulates in double: a float running sum
// over thousands of steps would lose the small late terms.
template <typename T>
void scan_row(const T* x, T* y, int64_t length, bool exclusive, bool reverse) {
  double acc = 0;
  for (int64_t step = 0; step < length; ++step) {
    const int64_t l = reverse ? length - 1 - step : step;
    const double v = x[l];
    if (!exclusive) acc += v;
    y[l] = static_cast<T>(acc);
    if (exclusive) acc += v;
  }
}

// The same scan for a [L, w] block of w <= kColumnBlock adjacent columns whose rows are
// `stride` elements apart: each step is one vectorised row update.
template <typename T>
void scan_columns(const T* x, T* y, int64_t length, int64_t width, int64_t stride, bool exclusive,
                  bool reverse) {
  double acc[kColumnBlock];
  std::fill(acc, acc + width, 0.0);
  for (int64_t step = 0; step < length; ++step) {
    const int64_t l = reverse ? length - 1 - step : step;
    const T* xr = x + l * stride;
    T* yr = y + l * stride;
    if (exclusive) {
#pragma omp simd
      for (int64_t p = 0; p < width; ++p) {
        yr[p] = static_cast<T>(acc[p]);
        acc[p] += xr[p];
      }
    } else {
#pragma omp simd
      for (int64_t p = 0; p < width; ++p) {
        acc[p] += xr[p];
        yr[p] = static_cast<T>(acc[p]);
      }
    }
  }
}

}  // namespace

// x, y: [outer, L, post] with L = the scanned axis, read in place (no transpose). post == 1:
// one task per row; otherwise one task per block of up to kColumnBlock adjacent columns.
Tensor cumsum(const Tensor& x_in, int64_t axis, bool exclusive, bool reverse) {
  check_floating(x_in, "cumsum");
  const int64_t a = checked_axis(axis, x_in.shape(), "cumsum");
  const Tensor x = x_in.contiguous();
  Tensor out = Tensor::empty(x.shape(), x.dtype());
  if (x.numel() == 0) return out;
  const int64_t outer = product(x.shape(), 0, a);
  const int64_t length = x.size(a);
  const int64_t post = product(x.shape(), a + 1, x.dim());
  dispatch_floating(x.dtype(), "cumsum", [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    T* py = out.data<T>();
    if (post == 1) {
      for_each_row(outer, length, [&](int64_t o) {
        scan_row(px + o * length, py + o * length, length, exclusive, reverse);
      });
      return;
    }
    const int64_t blocks = (post + kColumnBlock - 1) / kColumnBlock;
    for_each_row(outer * blocks, length * std::min(post, kColumnBlock), [&](int64_t t) {
      const int64_t o = t / blocks;
      const int64_t p0 = (t % blocks) * kColumnBlock;
      const int64_t offset = o * length * post + p0;
      scan_columns(px + offset, py + offset, length, std::min(kColumnBlock, post - p0), post,
                   exclusive, reverse);
    });
  });
  return out;
}

}  // namespace rota::backend
