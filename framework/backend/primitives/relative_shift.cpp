// The relative shift kernel pair (skew / unskew) and the pad-reshape reference realisation.
#include "framework/backend/primitives/relative_shift.h"

#include <algorithm>
#include <type_traits>

#include "framework/backend/cpu/dispatch.h"
#include "framework/backend/cpu/parallel.h"
#include "framework/backend/primitives/indexing.h"

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

// What differs between the two directions' frames: which side is x, and the messages.
struct ShiftDirection {
  bool forward;
  const char* op;
  const char* input;        // what the input is called in messages
  const char* input_width;  // its last dim
  const char* count;        // what n_out counts
};

constexpr ShiftDirection kForward{true, "relative_shift", "x", "n_x", "key"};
constexpr ShiftDirection kBackward{false, "relative_shift_backward", "grad", "n_k", "column"};

// The frame both directions share. The forward reads x: [..., n_q, n_x] and writes
// s: [..., n_q, n_k]; the backward reads g: [..., n_q, n_k] and writes dx: [..., n_q, n_x].
// Validates the shapes and the column map, then calls row(src, dst, start, map) for every row
// (rows in parallel, cost_per_row each), where row g is query i = g mod n_q, start = n_q − 1 − i
// is where its window begins in x's columns, and map is the column map (null: identity).
template <typename Row>
Tensor shift_rows(const ShiftDirection& dir, const Tensor& in, int64_t n_out,
                  const std::vector<int64_t>& column_map, Row&& row) {
  ROTA_CHECK(in.dim() >= 2, "{}: {} {} must be [..., n_q, {}]", dir.op, dir.input,
             shape_str(in.shape()), dir.input_width);
  ROTA_CHECK(n_out >= 0, "{}: negative {} count {}", dir.op, dir.count, n_out);
  const int64_t n_q = in.size(-2);
  const int64_t n_in = in.size(-1);
  const int64_t n_k = dir.forward ? n_out : n_in;
  const int64_t n_x = dir.forward ? n_in : n_out;
  check_columns(dir.op, in.shape(), n_q, n_k, n_x, column_map);
  Shape out_shape = in.shape();
  out_shape.back() = n_out;
  Tensor out = Tensor::empty(out_shape, in.dtype());
  if (out.numel() == 0) return out;
  const Tensor src = in.contiguous();
  const int64_t rows = out.numel() / n_out;  // [...]·n_q
  const int64_t* map = column_map.empty() ? nullptr : column_map.data();
  const int64_t cost_per_row = dir.forward ? n_k : n_x + n_k;
  dispatch_floating(src.dtype(), dir.op, [&](auto tag) {
    using T = decltype(tag);
    const T* sp = src.data<T>();
    T* dp = out.data<T>();
    parallel_for(rows, cost_per_row, [&](int64_t begin, int64_t end) {
      for (int64_t g = begin; g < end; ++g) {
        row(sp + g * n_in, dp + g * n_out, n_q - 1 - g % n_q, map);
      }
    });
  });
  return out;
}

}  // namespace

Tensor relative_shift_forward(const Tensor& x, int64_t n_k,
                              const std::vector<int64_t>& column_map) {
  // x: [R, n_x] with R = [...]·n_q, s: [R, n_k]; row g is query i = g mod n_q.
  // s[g, j] = x[g, c(j − i + n_q − 1)]: row i of s is a window of row i of x starting at
  // column n_q − 1 − i (realisation C's strided view, materialised contiguously).
  return shift_rows(kForward, x, n_k, column_map,
                    [n_k](const auto* src, auto* dst, int64_t start, const int64_t* map) {
                      if (map == nullptr) {
                        std::copy(src + start, src + start + n_k, dst);
                      } else {
                        const int64_t* m = map + start;
                        for (int64_t j = 0; j < n_k; ++j) dst[j] = src[m[j]];
                      }
                    });
}

Tensor relative_shift_backward(const Tensor& grad, int64_t n_x,
                               const std::vector<int64_t>& column_map) {
  // g: [R, n_k] → dx: [R, n_x]; dx[g, c(j − i + n_q − 1)] += g[g, j], other columns 0.
  // Rows are independent, so threads never write the same element.
  const int64_t n_k = grad.dim() >= 2 ? grad.size(-1) : 0;
  return shift_rows(kBackward, grad, n_x, column_map,
                    [n_k, n_x](const auto* src, auto* dst, int64_t start, const int64_t* map) {
                      using T = std::remove_pointer_t<decltype(dst)>;
                      std::fill(dst, dst + n_x, T(0));
                      if (map == nullptr) {
                        if (n_k > 0) std::copy(src, src + n_k, dst + start);
                      } else {
                        const int64_t* m = map + start;
                        for (int64_t j = 0; j < n_k; ++j) dst[m[j]] += src[j];
                      }
                    });
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
