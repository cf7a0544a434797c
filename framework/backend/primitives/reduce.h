// Reductions over axes (sum, mean, max, logsumexp), softmax / log-softmax and cumulative sum.
#pragma once

#include <vector>

#include "framework/tensor/tensor.h"

namespace rota::backend {

// Conventions for every function below: x is f32 or f64 with any strides; results are
// contiguous and have x's dtype. `axes` may be negative, in any order, and empty means "all
// axes"; a repeated or out-of-range axis throws naming the op and x's shape. keepdim keeps
// each reduced dim with size 1. Reducing a 0-d tensor over all (= no) axes returns a copy.

/// Terms summed in the working precision before a partial sum is added into a double total
/// (sums and column sums); fused kernels that also sum columns use it to give the same bits.
constexpr int64_t kSumChunk = 64;

/// Sum over `axes`. Empty reductions give 0. Partial sums of 64 terms are added in double, so
/// long f32 sums do not drift.
Tensor reduce_sum(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim);
/// Mean over `axes`. Empty reductions give NaN.
Tensor reduce_mean(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim);
/// Max over `axes`; NaN anywhere in a reduced set gives NaN. Reducing over an empty axis throws.
Tensor reduce_max(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim);
/// log(sum(exp(x))) over `axes`, computed stably: m + log(sum(exp(x - m))), m = max.
/// A set of all -inf gives -inf (not NaN); an empty reduction gives -inf.
Tensor logsumexp(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim);

/// Gradient of a sum / mean: grad (shape reduced_shape(shape, axes, keepdim)) broadcast back to
/// `shape` and multiplied by `scale` (1 for sum, 1 / count for mean).
Tensor expand_reduced(const Tensor& grad, const Shape& shape, const std::vector<int64_t>& axes,
                      bool keepdim, double scale);
/// Gradient of max (amax semantics): grad_x = [x == y] * grad_y / (number of ties in the set),
/// so tied maxima share the gradient evenly. y = reduce_max(x, axes, keepdim); grad_y like y.
Tensor reduce_max_backward(const Tensor& x, const Tensor& y, const Tensor& grad_y,
                           const std::vector<int64_t>& axes, bool keepdim);
/// Gradient of logsumexp: grad_x = grad_y * exp(x - y); 0 for sets whose y is -inf.
Tensor logsumexp_backward(const Tensor& x, const Tensor& y, const Tensor& grad_y,
                          const std::vector<int64_t>& axes, bool keepdim);

/// softmax over one axis: y = exp(x - max) / sum(exp(x - max)). A row of all -inf gives NaN
/// (0 / 0, as in PyTorch).
Tensor softmax(const Tensor& x, int64_t axis);
/// grad_x = y * (grad_y - sum(grad_y * y, axis)), y = softmax(x).
Tensor softmax_backward(const Tensor& y, const Tensor& grad_y, int64_t axis);
/// log_softmax over one axis: y = x - max - log(sum(exp(x - max))).
Tensor log_softmax(const Tensor& x, int64_t axis);
/// grad_x = grad_y - exp(y) * sum(grad_y, axis), y = log_softmax(x).
Tensor log_softmax_backward(const Tensor& y, const Tensor& grad_y, int64_t axis);

/// Cumulative sum along axis; exclusive starts at 0 and omits the element itself;
/// reverse sums from the end (used by the backward: cumsum' = reverse cumsum).
/// f32 accumulates in double, so long scans do not drift.
Tensor cumsum(const Tensor& x, int64_t axis, bool exclusive = false, bool reverse = false);

/// Permutes `axes` of x to the end (in the given order) and makes it contiguous: the result
/// is [outer, inner] with inner = product of the sizes of `axes`. No copy when x is contiguous
/// and the axes are already last. Used by reductions and their backward passes.
Tensor move_axes_last(const Tensor& x, const std::vector<int64_t>& axes);

}  // namespace rota::backend
