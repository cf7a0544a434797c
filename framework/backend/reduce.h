// Reductions over axes (sum, mean, max, logsumexp), softmax / log-softmax and cumulative sum.
#pragma once

#include <vector>

#include "framework/tensor/tensor.h"

namespace rota::backend {

/// Sum over `axes` (empty = all). keepdim keeps reduced dims with size 1.
Tensor reduce_sum(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim);
/// Mean over `axes` (empty = all).
Tensor reduce_mean(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim);
/// Max over `axes` (empty = all).
Tensor reduce_max(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim);
/// log(sum(exp(x))) over `axes`, computed stably (max subtracted).
Tensor logsumexp(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim);

/// softmax over one axis.
Tensor softmax(const Tensor& x, int64_t axis);
/// grad_x = y * (grad_y - sum(grad_y * y, axis)), y = softmax(x).
Tensor softmax_backward(const Tensor& y, const Tensor& grad_y, int64_t axis);
/// log_softmax over one axis.
Tensor log_softmax(const Tensor& x, int64_t axis);
/// grad_x = grad_y - exp(y) * sum(grad_y, axis), y = log_softmax(x).
Tensor log_softmax_backward(const Tensor& y, const Tensor& grad_y, int64_t axis);

/// Cumulative sum along axis; exclusive starts at 0 and omits the element itself;
/// reverse sums from the end (used by the backward: cumsum' = reverse cumsum).
Tensor cumsum(const Tensor& x, int64_t axis, bool exclusive = false, bool reverse = false);

/// Permutes `axes` of x to the end and makes it contiguous: the result is [outer, inner] with
/// inner = product of the sizes of `axes`. Used by reductions and their backward passes.
Tensor move_axes_last(const Tensor& x, const std::vector<int64_t>& axes);

}  // namespace rota::backend
