// Shape and view ops: forward through Tensor's view methods, backward maps the gradient back.
#include "framework/autograd/ops/shape.h"

#include <algorithm>

#include "framework/autograd/function.h"
#include "framework/backend/primitives/elementwise.h"
#include "framework/backend/primitives/indexing.h"

namespace rota {

namespace b = backend;

namespace {

// Gradient of a strided slice of an input of `shape`: zeros with g copied into the region
// the forward selected. Slicing the zeros with the same arguments selects the same region.
// g: the slice's shape; returns: shape.
Tensor slice_backward(const Tensor& g, const Shape& shape, int64_t dim, int64_t start, int64_t end,
                      int64_t step) {
  Tensor gx = zeros(shape, g.dtype());
  b::copy_into(gx.slice(dim, start, end, step), g);
  return gx;
}

}  // namespace

Variable reshape(const Variable& x, const Shape& shape) {
  // grad_x = reshape(g, x.shape): element order is unchanged by a reshape.
  return record_op("reshape", x.data().reshape(shape), {x},
                   [in_shape = x.shape()](const Tensor& g) -> std::vector<Tensor> {
                     return {g.reshape(in_shape)};
                   });
}

Variable view(const Variable& x, const Shape& shape) {
  // g may be non-contiguous (e.g. from a transpose downstream), so map back with reshape.
  return record_op("view", x.data().view(shape), {x},
                   [in_shape = x.shape()](const Tensor& g) -> std::vector<Tensor> {
                     return {g.reshape(in_shape)};
                   });
}

Variable flatten(const Variable& x, int64_t start_dim, int64_t end_dim) {
  if (x.dim() == 0) return reshape(x, {1});
  const int64_t start = normalize_axis(start_dim, x.dim(), "flatten");
  const int64_t end = normalize_axis(end_dim, x.dim(), "flatten");
  ROTA_CHECK(start <= end, "flatten: start_dim {} comes after end_dim {} for {}", start_dim,
             end_dim, shape_str(x.shape()));
  Shape shape(x.shape().begin(), x.shape().begin() + start);
  int64_t merged = 1;
  for (int64_t d = start; d <= end; ++d) merged *= x.size(d);
  shape.push_back(merged);
  shape.insert(shape.end(), x.shape().begin() + end + 1, x.shape().end());
  return reshape(x, shape);
}

Variable permute(const Variable& x, const std::vector<int64_t>& order) {
  Tensor out = x.data().permute(order);  // validates order
  // grad_x = permute(g, inverse): inverse[order[i]] = i.
  std::vector<int64_t> inverse(order.size());
  for (size_t i = 0; i < order.size(); ++i) {
    inverse[normalize_axis(order[i], x.dim(), "permute")] = static_cast<int64_t>(i);
  }
  return record_op(
      "permute", std::move(out), {x},
      [inverse](const Tensor& g) -> std::vector<Tensor> { return {g.permute(inverse)}; });
}

Variable transpose(const Variable& x, int64_t d0, int64_t d1) {
  // A transpose is its own inverse.
  return record_op(
      "transpose", x.data().transpose(d0, d1), {x},
      [d0, d1](const Tensor& g) -> std::vector<Tensor> { return {g.transpose(d0, d1)}; });
}

Variable slice(const Variable& x, int64_t dim, int64_t start, int64_t end, int64_t step) {
  return record_op("slice", x.data().slice(dim, start, end, step), {x},
                   [shape = x.shape(), dim, start, end, step](const Tensor& g) {
                     return std::vector<Tensor>{slice_backward(g, shape, dim, start, end, step)};
                   });
}

Variable narrow(const Variable& x, int64_t dim, int64_t start, int64_t length) {
  return record_op(
      "narrow", x.data().narrow(dim, start, length), {x},
      [shape = x.shape(), dim, start, length](const Tensor& g) {
        return std::vector<Tensor>{slice_backward(g, shape, dim, start, start + length, 1)};
      });
}

Variable expand(const Variable& x, const Shape& shape) {
  // Every output element broadcast from one input element adds its gradient to it.
  return record_op("expand", x.data().expand(shape), {x},
                   [in_shape = x.shape()](const Tensor& g) -> std::vector<Tensor> {
                     return {b::sum_to_shape(g, in_shape)};
                   });
}

Variable unsqueeze(const Variable& x, int64_t dim) {
  const int64_t a = normalize_axis(dim, x.dim() + 1, "unsqueeze");
  // g: x's shape with a 1 inserted at a; grad_x = squeeze(g, a).
  return record_op("unsqueeze", x.data().unsqueeze(a), {x},
                   [a](const Tensor& g) -> std::vector<Tensor> { return {g.squeeze(a)}; });
}

Variable squeeze(const Variable& x, int64_t dim) {
  const int64_t a = normalize_axis(dim, x.dim(), "squeeze");
  // g: x's shape without dim a; grad_x = unsqueeze(g, a).
  return record_op("squeeze", x.data().squeeze(a), {x},
                   [a](const Tensor& g) -> std::vector<Tensor> { return {g.unsqueeze(a)}; });
}

Variable squeeze(const Variable& x) {
  Shape shape;
  for (int64_t d : x.shape()) {
    if (d != 1) shape.push_back(d);
  }
  // Dropping size-1 dims never needs a copy, so this view always succeeds.
  return view(x, shape);
}

Variable contiguous(const Variable& x) {
  // Same shape and values, so grad_x = g.
  return record_op("contiguous", x.data().contiguous(), {x},
                   [](const Tensor& g) -> std::vector<Tensor> { return {g}; });
}

Variable concat(const std::vector<Variable>& xs, int64_t axis) {
  ROTA_CHECK(!xs.empty(), "concat: no tensors to concatenate");
  std::vector<Tensor> parts;
  parts.reserve(xs.size());
  for (const Variable& x : xs) parts.push_back(x.data());
  Tensor out = b::concat(parts, axis);  // validates shapes and axis
  const int64_t a = normalize_axis(axis, out.dim(), "concat");
  std::vector<int64_t> sizes;
  for (const Variable& x : xs) sizes.push_back(x.size(a));
  // grad_x[i] = narrow(g, a, offset_i, size_i): a view of the output gradient.
  return record_op("concat", std::move(out), xs,
                   [needs = inspect_inputs(xs).needs, sizes, a](const Tensor& g) {
                     std::vector<Tensor> grads;
                     int64_t offset = 0;
                     for (size_t i = 0; i < sizes.size(); ++i) {
                       grads.push_back(needs[i] ? g.narrow(a, offset, sizes[i]) : Tensor());
                       offset += sizes[i];
                     }
                     return grads;
                   });
}

std::vector<Variable> split(const Variable& x, const std::vector<int64_t>& sizes, int64_t axis) {
  ROTA_CHECK(x.dim() > 0, "split: cannot split a 0-dim tensor");
  const int64_t a = normalize_axis(axis, x.dim(), "split");
  int64_t total = 0;
  for (int64_t s : sizes) {
    ROTA_CHECK(s >= 0, "split: negative size {} in {} for {}", s, shape_str(sizes),
               shape_str(x.shape()));
    total += s;
  }
  ROTA_CHECK(!sizes.empty() && total == x.size(a),
             "split: sizes {} sum to {} but dim {} of {} has size {}", shape_str(sizes), total, a,
             shape_str(x.shape()), x.size(a));
  std::vector<Tensor> pieces;
  int64_t offset = 0;
  for (int64_t s : sizes) {
    pieces.push_back(x.data().narrow(a, offset, s));
    offset += s;
  }
  // grad_x = concat(grad_pieces, a); the engine fills gradients that never arrived with zeros.
  return record_multi_output_op("split", std::move(pieces), {x},
                                [a](const std::vector<Tensor>& grads) -> std::vector<Tensor> {
                                  return {b::concat(grads, a)};
                                });
}

std::vector<Variable> chunk(const Variable& x, int64_t n, int64_t axis) {
  ROTA_CHECK(n >= 1, "chunk: number of chunks must be positive, got {} for {}", n,
             shape_str(x.shape()));
  ROTA_CHECK(x.dim() > 0, "chunk: cannot chunk a 0-dim tensor");
  const int64_t size = x.size(normalize_axis(axis, x.dim(), "chunk"));
  if (size == 0) return split(x, std::vector<int64_t>(n, 0), axis);
  const int64_t piece = (size + n - 1) / n;
  std::vector<int64_t> sizes;
  for (int64_t left = size; left > 0; left -= piece) sizes.push_back(std::min(piece, left));
  return split(x, sizes, axis);
}

Variable stack(const std::vector<Variable>& xs, int64_t axis) {
  ROTA_CHECK(!xs.empty(), "stack: no tensors to stack");
  for (size_t i = 1; i < xs.size(); ++i) {
    ROTA_CHECK(xs[i].shape() == xs[0].shape(), "stack: {} and {} differ (inputs 0 and {})",
               shape_str(xs[0].shape()), shape_str(xs[i].shape()), i);
  }
  const int64_t a = normalize_axis(axis, xs[0].dim() + 1, "stack");
  // Composite: unsqueeze + concat carry the backward (each input gets its slice of g).
  std::vector<Variable> parts;
  parts.reserve(xs.size());
  for (const Variable& x : xs) parts.push_back(unsqueeze(x, a));
  return concat(parts, a);
}

}  // namespace rota
