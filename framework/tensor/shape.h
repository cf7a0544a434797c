// Shapes and strides: element counts, contiguous strides, broadcasting, axis normalisation.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace rota {

using Shape = std::vector<int64_t>;
using Strides = std::vector<int64_t>;

/// Number of elements (1 for a scalar shape []).
int64_t shape_numel(const Shape& shape);
/// "[4,128,256]".
std::string shape_str(const Shape& shape);
/// Row-major strides (in elements) for a contiguous tensor of this shape.
Strides contiguous_strides(const Shape& shape);
/// NumPy broadcast of two shapes; throws naming `op` and both shapes when incompatible.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);
/// Maps a possibly negative axis into [0, ndim); throws naming `op` when out of range.
int64_t normalize_axis(int64_t axis, int64_t ndim, const char* op);
/// Normalises, sorts and de-duplicates a list of axes; an empty list means all axes.
std::vector<int64_t> normalize_axes(const std::vector<int64_t>& axes, int64_t ndim, const char* op);
/// Shape after reducing `axes` (sorted, normalised); keeps size-1 dims when keepdim.
Shape reduced_shape(const Shape& shape, const std::vector<int64_t>& axes, bool keepdim);

}  // namespace rota
