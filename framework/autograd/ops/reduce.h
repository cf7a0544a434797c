// Differentiable reductions (sum, mean, max, logsumexp), softmax / log-softmax and cumsum.
#pragma once

#include <vector>

#include "framework/autograd/variable.h"

namespace rota {

// Reductions: `axes` may be negative and in any order; empty means all axes. keepdim keeps
// each reduced dim with size 1. Bad axes throw naming the op and the input shape.

/// Sum over `axes`. grad_x = grad_y broadcast back to x's shape.
Variable sum(const Variable& x, const std::vector<int64_t>& axes = {}, bool keepdim = false);
/// Mean over `axes`. grad_x = grad_y broadcast back, divided by the number of elements averaged.
Variable mean(const Variable& x, const std::vector<int64_t>& axes = {}, bool keepdim = false);
/// Max over `axes` (amax): tied maxima share the gradient evenly.
Variable max(const Variable& x, const std::vector<int64_t>& axes = {}, bool keepdim = false);
/// log(sum(exp(x))) over `axes`, stable for large x; all -inf gives -inf (with zero gradient).
/// grad_x = grad_y * softmax(x) over the reduced set.
Variable logsumexp(const Variable& x, const std::vector<int64_t>& axes = {}, bool keepdim = false);

/// softmax along `axis` (max-subtracted, so large inputs stay finite).
Variable softmax(const Variable& x, int64_t axis = -1);
/// log(softmax(x)) along `axis`, computed without forming softmax (no log(0) for tiny
/// probabilities).
Variable log_softmax(const Variable& x, int64_t axis = -1);

/// Cumulative sum along `axis`. exclusive: y[i] = sum over j < i (y[0] = 0); reverse: sums run
/// from the end. The backward is the cumsum of grad_y in the opposite direction.
Variable cumsum(const Variable& x, int64_t axis, bool exclusive = false, bool reverse = false);

}  // namespace rota
