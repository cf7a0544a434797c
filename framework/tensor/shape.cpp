// Shape arithmetic shared by the tensor, backend and autograd layers.
#include "framework/tensor/shape.h"

#include <algorithm>

#include "framework/base/error.h"

namespace rota {

int64_t shape_numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string shape_str(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ",";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

Strides contiguous_strides(const Shape& shape) {
  Strides strides(shape.size());
  int64_t stride = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= shape[i];
  }
  return strides;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  const size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    ROTA_CHECK(da == db || da == 1 || db == 1, "{}: shapes {} and {} cannot be broadcast", op,
               shape_str(a), shape_str(b));
    out[i] = da == 1 ? db : da;
  }
  return out;
}

int64_t normalize_axis(int64_t axis, int64_t ndim, const char* op) {
  const int64_t a = axis < 0 ? axis + ndim : axis;
  ROTA_CHECK(a >= 0 && a < ndim, "{}: axis {} out of range for a tensor with {} dims", op, axis,
             ndim);
  return a;
}

std::vector<int64_t> normalize_axes(const std::vector<int64_t>& axes, int64_t ndim,
                                    const char* op) {
  std::vector<int64_t> out;
  if (axes.empty()) {
    for (int64_t i = 0; i < ndim; ++i) out.push_back(i);
    return out;
  }
  for (int64_t a : axes) out.push_back(normalize_axis(a, ndim, op));
  std::sort(out.begin(), out.end());
  ROTA_CHECK(std::adjacent_find(out.begin(), out.end()) == out.end(), "{}: repeated axis", op);
  return out;
}

Shape reduced_shape(const Shape& shape, const std::vector<int64_t>& axes, bool keepdim) {
  Shape out;
  size_t k = 0;
  for (int64_t i = 0; i < static_cast<int64_t>(shape.size()); ++i) {
    const bool reduced = k < axes.size() && axes[k] == i;
    if (reduced) {
      ++k;
      if (keepdim) out.push_back(1);
    } else {
      out.push_back(shape[i]);
    }
  }
  return out;
}

}  // namespace rota
