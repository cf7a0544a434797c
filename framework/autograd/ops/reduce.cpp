// Reduction ops: forward through backend::reduce kernels, backward through their fused partners.
#include "framework/autograd/ops/reduce.h"

#include "framework/autograd/function.h"
#include "framework/backend/primitives/reduce.h"

namespace rota {

namespace b = backend;

namespace {

// Number of elements each output of a reduction over `axes` (empty = all) combines.
int64_t reduced_count(const Shape& shape, const std::vector<int64_t>& axes) {
  int64_t n = 1;
  for (int64_t a : normalize_axes(axes, static_cast<int64_t>(shape.size()), "mean")) {
    n *= shape[a];
  }
  return n;
}

}  // namespace

// x: any shape -> y: reduced. grad_x[..] = grad_y[reduced index].
Variable sum(const Variable& x, const std::vector<int64_t>& axes, bool keepdim) {
  Tensor y = b::reduce_sum(x.data(), axes, keepdim);
  if (!inspect_inputs({x}).any) return Variable(std::move(y), false);
  return record_op("sum", std::move(y), {x},
                   [shape = x.shape(), axes, keepdim](const Tensor& g) -> std::vector<Tensor> {
                     return {b::expand_reduced(g, shape, axes, keepdim, 1.0)};
                   });
}

// x: any shape -> y: reduced. grad_x[..] = grad_y[reduced index] / count.
Variable mean(const Variable& x, const std::vector<int64_t>& axes, bool keepdim) {
  Tensor y = b::reduce_mean(x.data(), axes, keepdim);
  if (!inspect_inputs({x}).any) return Variable(std::move(y), false);
  const int64_t count = reduced_count(x.shape(), axes);
  return record_op(
      "mean", std::move(y), {x},
      [shape = x.shape(), axes, keepdim, count](const Tensor& g) -> std::vector<Tensor> {
        return {b::expand_reduced(g, shape, axes, keepdim, 1.0 / count)};
      });
}

// x: any shape -> y: reduced. grad_x = [x == y] * grad_y / ties (saves x and y).
Variable max(const Variable& x, const std::vector<int64_t>& axes, bool keepdim) {
  Tensor y = b::reduce_max(x.data(), axes, keepdim);
  if (!inspect_inputs({x}).any) return Variable(std::move(y), false);
  return record_op("max", y, {x},
                   [xd = x.data(), y, axes, keepdim](const Tensor& g) -> std::vector<Tensor> {
                     return {b::reduce_max_backward(xd, y, g, axes, keepdim)};
                   });
}

// x: any shape -> y: reduced. grad_x = grad_y * exp(x - y) (saves x and y).
Variable logsumexp(const Variable& x, const std::vector<int64_t>& axes, bool keepdim) {
  Tensor y = b::logsumexp(x.data(), axes, keepdim);
  if (!inspect_inputs({x}).any) return Variable(std::move(y), false);
  return record_op("logsumexp", y, {x},
                   [xd = x.data(), y, axes, keepdim](const Tensor& g) -> std::vector<Tensor> {
                     return {b::logsumexp_backward(xd, y, g, axes, keepdim)};
                   });
}

// x, y: same shape. grad_x = y * (grad_y - sum(grad_y * y, axis)) (saves only y).
Variable softmax(const Variable& x, int64_t axis) {
  Tensor y = b::softmax(x.data(), axis);
  if (!inspect_inputs({x}).any) return Variable(std::move(y), false);
  return record_op("softmax", y, {x}, [y, axis](const Tensor& g) -> std::vector<Tensor> {
    return {b::softmax_backward(y, g, axis)};
  });
}

// x, y: same shape. grad_x = grad_y - exp(y) * sum(grad_y, axis) (saves only y).
Variable log_softmax(const Variable& x, int64_t axis) {
  Tensor y = b::log_softmax(x.data(), axis);
  if (!inspect_inputs({x}).any) return Variable(std::move(y), false);
  return record_op("log_softmax", y, {x}, [y, axis](const Tensor& g) -> std::vector<Tensor> {
    return {b::log_softmax_backward(y, g, axis)};
  });
}

// x, y: same shape. y_i = sum_{j <= i} x_j gives dL/dx_j = sum_{i >= j} g_i: the same scan
// run the other way (exclusive stays exclusive). Saves nothing.
Variable cumsum(const Variable& x, int64_t axis, bool exclusive, bool reverse) {
  Tensor y = b::cumsum(x.data(), axis, exclusive, reverse);
  if (!inspect_inputs({x}).any) return Variable(std::move(y), false);
  return record_op("cumsum", std::move(y), {x},
                   [axis, exclusive, reverse](const Tensor& g) -> std::vector<Tensor> {
                     return {b::cumsum(g, axis, exclusive, !reverse)};
                   });
}

}  // namespace rota
