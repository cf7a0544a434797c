// Reduction kernels: the reduced axes are moved innermost, then each output row is one loop.
#include "framework/backend/reduce.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "framework/backend/dispatch.h"
#include "framework/backend/parallel.h"

namespace rota::backend {

Tensor move_axes_last(const Tensor& x, const std::vector<int64_t>& axes) {
  std::vector<int64_t> order;
  std::vector<bool> reduced(x.dim(), false);
  for (int64_t a : axes) reduced[a] = true;
  for (int64_t i = 0; i < x.dim(); ++i) {
    if (!reduced[i]) order.push_back(i);
  }
  for (int64_t a : axes) order.push_back(a);
  return x.permute(order).contiguous();
}

namespace {

// Applies row_fn(const T* row, int64_t inner) -> T to every row of x with `axes` moved last.
template <typename RowFn>
Tensor reduce_rows(const Tensor& x, const std::vector<int64_t>& axes_in, bool keepdim,
                   const char* op, RowFn&& row_fn) {
  const std::vector<int64_t> axes = normalize_axes(axes_in, x.dim(), op);
  const Shape out_shape = reduced_shape(x.shape(), axes, keepdim);
  const Tensor moved = move_axes_last(x, axes);
  int64_t inner = 1;
  for (int64_t a : axes) inner *= x.size(a);
  const int64_t outer = shape_numel(out_shape);
  Tensor out = Tensor::empty(out_shape, x.dtype());
  dispatch_floating(x.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    const T* px = moved.data<T>();
    T* po = out.data<T>();
    parallel_for(outer, std::max<int64_t>(inner, 1), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) po[r] = row_fn(px + r * inner, inner);
    });
  });
  return out;
}

}  // namespace

Tensor reduce_sum(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim) {
  return reduce_rows(x, axes, keepdim, "sum", [](const auto* row, int64_t n) {
    using T = std::remove_const_t<std::remove_pointer_t<decltype(row)>>;
    T acc = 0;
#pragma omp simd reduction(+ : acc)
    for (int64_t i = 0; i < n; ++i) acc += row[i];
    return acc;
  });
}

Tensor reduce_mean(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim) {
  return reduce_rows(x, axes, keepdim, "mean", [](const auto* row, int64_t n) {
    using T = std::remove_const_t<std::remove_pointer_t<decltype(row)>>;
    T acc = 0;
#pragma omp simd reduction(+ : acc)
    for (int64_t i = 0; i < n; ++i) acc += row[i];
    return n ? acc / static_cast<T>(n) : std::numeric_limits<T>::quiet_NaN();
  });
}

Tensor reduce_max(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim) {
  ROTA_CHECK(x.numel() > 0, "max: empty tensor {}", shape_str(x.shape()));
  return reduce_rows(x, axes, keepdim, "max", [](const auto* row, int64_t n) {
    using T = std::remove_const_t<std::remove_pointer_t<decltype(row)>>;
    T best = -std::numeric_limits<T>::infinity();
    for (int64_t i = 0; i < n; ++i) best = row[i] > best || std::isnan(row[i]) ? row[i] : best;
    return best;
  });
}

Tensor logsumexp(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim) {
  return reduce_rows(x, axes, keepdim, "logsumexp", [](const auto* row, int64_t n) {
    using T = std::remove_const_t<std::remove_pointer_t<decltype(row)>>;
    T m = -std::numeric_limits<T>::infinity();
    for (int64_t i = 0; i < n; ++i) m = std::max(m, row[i]);
    if (std::isinf(m)) return m;
    T acc = 0;
    for (int64_t i = 0; i < n; ++i) acc += std::exp(row[i] - m);
    return m + std::log(acc);
  });
}

}  // namespace rota::backend
