// Iteration over the element offsets of strided tensors (innermost dim fastest).
#pragma once

#include <cstdint>
#include <vector>

#include "framework/tensor/shape.h"

namespace rota {

/// Calls f(offset) for every element of a tensor with this shape and these strides, row-major.
template <typename F>
void for_each_strided(const Shape& shape, const Strides& strides, F&& f) {
  const int64_t n = shape_numel(shape);
  if (n == 0) return;
  const int64_t nd = static_cast<int64_t>(shape.size());
  if (nd == 0) {
    f(int64_t{0});
    return;
  }
  std::vector<int64_t> index(nd, 0);
  const int64_t inner = shape[nd - 1];
  const int64_t inner_stride = strides[nd - 1];
  int64_t base = 0;
  for (int64_t done = 0; done < n; done += inner) {
    for (int64_t i = 0; i < inner; ++i) f(base + i * inner_stride);
    for (int64_t d = nd - 2; d >= 0; --d) {
      base += strides[d];
      if (++index[d] < shape[d]) break;
      base -= strides[d] * shape[d];
      index[d] = 0;
    }
  }
}

/// Calls f(offset_a, offset_b) for two tensors of the same shape with their own strides.
template <typename F>
void for_each_strided_pair(const Shape& shape, const Strides& sa, const Strides& sb, F&& f) {
  const int64_t n = shape_numel(shape);
  if (n == 0) return;
  const int64_t nd = static_cast<int64_t>(shape.size());
  if (nd == 0) {
    f(int64_t{0}, int64_t{0});
    return;
  }
  std::vector<int64_t> index(nd, 0);
  const int64_t inner = shape[nd - 1];
  int64_t base_a = 0;
  int64_t base_b = 0;
  for (int64_t done = 0; done < n; done += inner) {
    for (int64_t i = 0; i < inner; ++i) f(base_a + i * sa[nd - 1], base_b + i * sb[nd - 1]);
    for (int64_t d = nd - 2; d >= 0; --d) {
      base_a += sa[d];
      base_b += sb[d];
      if (++index[d] < shape[d]) break;
      base_a -= sa[d] * shape[d];
      base_b -= sb[d] * shape[d];
      index[d] = 0;
    }
  }
}

}  // namespace rota

namespace rota {

/// Calls row(offset_a, offset_b) for rows [row_begin, row_end) of the innermost dim, where a
/// row is one index of all dims but the last; offsets point at the row's first element.
/// Lets callers split rows across threads.
template <typename F>
void for_each_row_pair(const Shape& shape, const Strides& sa, const Strides& sb, int64_t row_begin,
                       int64_t row_end, F&& row) {
  const int64_t nd = static_cast<int64_t>(shape.size());
  if (row_begin >= row_end) return;
  std::vector<int64_t> index(nd > 0 ? nd - 1 : 0, 0);
  int64_t rest = row_begin;
  int64_t base_a = 0;
  int64_t base_b = 0;
  for (int64_t d = nd - 2; d >= 0; --d) {
    index[d] = rest % shape[d];
    rest /= shape[d];
    base_a += index[d] * sa[d];
    base_b += index[d] * sb[d];
  }
  for (int64_t r = row_begin; r < row_end; ++r) {
    row(base_a, base_b);
    for (int64_t d = nd - 2; d >= 0; --d) {
      base_a += sa[d];
      base_b += sb[d];
      if (++index[d] < shape[d]) break;
      base_a -= sa[d] * shape[d];
      base_b -= sb[d] * shape[d];
      index[d] = 0;
    }
  }
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
