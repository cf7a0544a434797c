// Iteration over the element offsets of strided tensors (innermost dim fastest).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "framework/tensor/shape.h"

namespace rota {

namespace detail {

// The row walk the loops below share: rows [row_begin, row_end) of a tensor of `shape`, a row
// being one index of all dims but the last. Calls row(base) with base[k] the offset of the
// row's first element under strides[k]; the offsets follow an odometer over the leading dims
// (the row index is divided out once, at row_begin).
template <size_t K, typename F>
void walk_rows(const Shape& shape, const std::array<const int64_t*, K>& strides, int64_t row_begin,
               int64_t row_end, F&& row) {
  const int64_t nd = static_cast<int64_t>(shape.size());
  if (row_begin >= row_end) return;
  std::vector<int64_t> index(nd > 0 ? nd - 1 : 0, 0);
  std::array<int64_t, K> base{};
  int64_t rest = row_begin;
  for (int64_t d = nd - 2; d >= 0; --d) {
    index[d] = rest % shape[d];
    rest /= shape[d];
    for (size_t k = 0; k < K; ++k) base[k] += index[d] * strides[k][d];
  }
  for (int64_t r = row_begin; r < row_end; ++r) {
    row(static_cast<const std::array<int64_t, K>&>(base));
    for (int64_t d = nd - 2; d >= 0; --d) {
      for (size_t k = 0; k < K; ++k) base[k] += strides[k][d];
      if (++index[d] < shape[d]) break;
      for (size_t k = 0; k < K; ++k) base[k] -= strides[k][d] * shape[d];
      index[d] = 0;
    }
  }
}

}  // namespace detail

/// Calls f(offset) for every element of a tensor with this shape and these strides, row-major.
template <typename F>
void for_each_strided(const Shape& shape, const Strides& strides, F&& f) {
  const int64_t n = shape_numel(shape);
  if (n == 0) return;
  if (shape.empty()) {
    f(int64_t{0});
    return;
  }
  const int64_t inner = shape.back();
  const int64_t inner_stride = strides.back();
  detail::walk_rows<1>(shape, {strides.data()}, 0, n / inner,
                       [&](const std::array<int64_t, 1>& base) {
                         for (int64_t i = 0; i < inner; ++i) f(base[0] + i * inner_stride);
                       });
}

/// Calls f(offset_a, offset_b) for two tensors of the same shape with their own strides.
template <typename F>
void for_each_strided_pair(const Shape& shape, const Strides& sa, const Strides& sb, F&& f) {
  const int64_t n = shape_numel(shape);
  if (n == 0) return;
  if (shape.empty()) {
    f(int64_t{0}, int64_t{0});
    return;
  }
  const int64_t inner = shape.back();
  const int64_t inner_a = sa.back();
  const int64_t inner_b = sb.back();
  detail::walk_rows<2>(shape, {sa.data(), sb.data()}, 0, n / inner,
                       [&](const std::array<int64_t, 2>& base) {
                         for (int64_t i = 0; i < inner; ++i)
                           f(base[0] + i * inner_a, base[1] + i * inner_b);
                       });
}

/// Calls row(offset_a, offset_b) for rows [row_begin, row_end) of the innermost dim, where a
/// row is one index of all dims but the last; offsets point at the row's first element.
/// Lets callers split rows across threads.
template <typename F>
void for_each_row_pair(const Shape& shape, const Strides& sa, const Strides& sb, int64_t row_begin,
                       int64_t row_end, F&& row) {
  detail::walk_rows<2>(shape, {sa.data(), sb.data()}, row_begin, row_end,
                       [&](const std::array<int64_t, 2>& base) { row(base[0], base[1]); });
}

/// Element offset of the first element of each of the G = Π leading sizes matrices [N, W] of a
/// tensor [..., N, W] with these strides (at least 2 dims), in row-major order of the leading
/// dims: matrix g's row r starts at offsets[g] + r * strides[dim − 2].
inline std::vector<int64_t> matrix_offsets(const Shape& shape, const Strides& strides) {
  const int64_t lead = static_cast<int64_t>(shape.size()) - 2;
  int64_t groups = 1;
  for (int64_t i = 0; i < lead; ++i) groups *= shape[i];
  std::vector<int64_t> offsets(groups, 0);
  for (int64_t g = 0; g < groups; ++g) {
    int64_t rest = g, offset = 0;
    for (int64_t i = lead - 1; i >= 0; --i) {
      offset += (rest % shape[i]) * strides[i];
      rest /= shape[i];
    }
    offsets[g] = offset;
  }
  return offsets;
}

}  // namespace rota
