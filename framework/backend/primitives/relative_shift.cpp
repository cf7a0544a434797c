// The relative shift kernel pair (skew / unskew) and the pad-reshape reference realisation.
#include "framework/backend/primitives/relative_shift.h"

#include <algorithm>

#include "framework/backend/cpu/dispatch.h"
#include "framework/backend/primitives/indexing.h"
#include "framework/backend/cpu/parallel.h"

namespace rota::backend {

RelativeDistances relative_distances(int64_t n_q, int64_t n_k, int64_t query_offset) {
  RelativeDistances d;
  d.t_min = -(query_offset + n_q - 1);
  d.t_max = n_k - 1 - query_offset;
  d.count = n_q > 0 && n_k > 0 ? n_q + n_k - 1 : 0;
  return d;
}

namespace {

// Validates the column map (or the identity's width requirement) for n_q queries, n_k keys and
// a source with n_x columns.
void check_columns(const char* op, const Shape& x_shape, int64_t n_q, int64_t n_k, int64_t n_x,
                   const std::vector<int64_t>& column_map) {
  const int64_t n_rel = n_q > 0 && n_k > 0 ? n_q + n_k - 1 : 0;
  if (column_map.empty()) {
    ROTA_CHECK(n_x >= n_rel,
               "{}: x {} has {} columns but n_q + n_k − 1 = {} + {} − 1 = {} relative rows are "
               "needed",
               op, shape_str(x_shape), n_x, n_q, n_k, n_rel);
    return;
  }
  ROTA_CHECK(static_cast<int64_t>(column_map.size()) >= n_rel,
             "{}: column map has {} entries, n_q + n_k − 1 = {} needed (x {})", op,
             column_map.size(), n_rel, shape_str(x_shape));
  for (int64_t r = 0; r < n_rel; ++r) {
    ROTA_CHECK(column_map[r] >= 0 && column_map[r] < n_x,
               "{}: column map entry {} = {} is outside the {} columns of x {}", op, r,
               column_map[r], n_x, shape_str(x_shape));
  }
}

}  // namespace

Tensor relative_shift_forward(const Tensor& x_in, int64_t n_k,
                              const std::vector<int64_t>& column_map) {
  ROTA_CHECK(x_in.dim() >= 2, "relative_shift: x {} must be [..., n_q, n_x]",
             shape_str(x_in.shape()));
  ROTA_CHECK(n_k >= 0, "relative_shift: negative key count {}", n_k);
  const int64_t n_q = x_in.size(-2);
  const int64_t n_x = x_in.size(-1);
  check_columns("relative_shift", x_in.shape(), n_q, n_k, n_x, column_map);
  Shape out_shape = x_in.shape();
  out_shape.back() = n_k;
  Tensor s = Tensor::empty(out_shape, x_in.dtype());
  if (s.numel() == 0) return s;
  const Tensor x = x_in.contiguous();
  const int64_t rows = x.numel() / n_x;  // [...]·n_q
  const int64_t* map = column_map.empty() ? nullptr : column_map.data();
  dispatch_floating(x.dtype(), "relative_shift", [&](auto tag) {
    using T = decltype(tag);
    const T* xp = x.data<T>();
    T* sp = s.data<T>();
    // x: [R, n_x] with R = [...]·n_q, s: [R, n_k]; row g is query i = g mod n_q.
    // s[g, j] = x[g, c(j − i + n_q − 1)]: row i of s is a window of row i of x starting at
    // column n_q − 1 − i (realisation C's strided view, materialised contiguously).
    parallel_for(rows, n_k, [&](int64_t begin, int64_t end) {
      for (int64_t g = begin; g < end; ++g) {
        const int64_t start = n_q - 1 - g % n_q;
        const T* src = xp + g * n_x;
        T* dst = sp + g * n_k;
        if (map == nullptr) {
          std::copy(src + start, src + start + n_k, dst);
        } else {
          const int64_t* m = map + start;
          for (int64_t j = 0; j < n_k; ++j) dst[j] = src[m[j]];
        }
      }
    });
  });
  return s;
}

Tensor relative_shift_backward(const Tensor& grad_in, int64_t n_x,
                               const std::vector<int64_t>& column_map) {
  ROTA_CHECK(grad_in.dim() >= 2, "relative_shift_backward: grad {} must be [..., n_q, n_k]",
             shape_str(grad_in.shape()));
  ROTA_CHECK(n_x >= 0, "relative_shift_backward: negative column count {}", n_x);
  const int64_t n_q = grad_in.size(-2);
  const int64_t n_k = grad_in.size(-1);
  check_columns("relative_shift_backward", grad_in.shape(), n_q, n_k, n_x, column_map);
  Shape out_shape = grad_in.shape();
  out_shape.back() = n_x;
  Tensor dx = Tensor::empty(out_shape, grad_in.dtype());
  if (dx.numel() == 0) return dx;
  const Tensor g = grad_in.contiguous();
  const int64_t rows = dx.numel() / n_x;
  const int64_t* map = column_map.empty() ? nullptr : column_map.data();
  dispatch_floating(g.dtype(), "relative_shift_backward", [&](auto tag) {
    using T = decltype(tag);
    const T* gp = g.data<T>();
    T* dp = dx.data<T>();
    // g: [R, n_k] → dx: [R, n_x]; dx[g, c(j − i + n_q − 1)] += g[g, j], other columns 0.
    // Rows are independent, so threads never write the same element.
    parallel_for(rows, n_x + n_k, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const int64_t start = n_q - 1 - r % n_q;
        const T* src = gp + r * n_k;
        T* dst = dp + r * n_x;
        std::fill(dst, dst + n_x, T(0));
        if (map == nullptr) {
          if (n_k > 0) std::copy(src, src + n_k, dst + start);
        } else {
          const int64_t* m = map + start;
          for (int64_t j = 0; j < n_k; ++j) dst[m[j]] += src[j];
        }
      }
    });
  });
  return dx;
}

Tensor relative_shift_pad_reshape(const Tensor& x, int64_t n_k) {
  ROTA_CHECK(x.dim() >= 2, "relative_shift_pad_reshape: x {} must be [..., T1, T2]",
             shape_str(x.shape()));
  const int64_t t1 = x.size(-2);
  const int64_t t2 = x.size(-1);
  ROTA_CHECK(n_k >= 0 && n_k <= t2, "relative_shift_pad_reshape: n_k = {} not in [0, {}] for x {}",
             n_k, t2, shape_str(x.shape()));
  Shape pad_shape = x.shape();
  pad_shape.back() = 1;
  // [..., T1, T2 + 1] with the zero column first.
  const Tensor padded = concat({zeros(pad_shape, x.dtype()), x}, -1);
  Shape as_columns = x.shape();
  as_columns[as_columns.size() - 2] = t2 + 1;
  as_columns.back() = t1;
  // Reinterpret as [..., T2 + 1, T1], drop the first row (the first T1 elements), reinterpret
  // the remaining T1·T2 elements as [..., T1, T2] and keep the first n_k columns.
  const Tensor dropped = padded.view(as_columns).slice(-2, 1, t2 + 1);
  return dropped.reshape(x.shape()).slice(-1, 0, n_k).contiguous();
}

}  // namespace rota::backend
