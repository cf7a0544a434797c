// Differentiable indexing ops: gather, index_select, masked_fill, where, tril / triu.
#pragma once

#include <cstdint>

#include "framework/autograd/variable.h"

namespace rota {

// Index, mask and condition tensors carry no gradient and are saved by reference for the
// backward: do not modify them in place before backward has run.

/// torch.gather along axis: out[..., j, ...] = x[..., index[..., j, ...], ...]. index (i32 or
/// i64) has x's rank with index.size(d) <= x.size(d) for d != axis; out has index's shape.
/// Backward scatter-adds the gradient (repeated indices accumulate).
Variable gather(const Variable& x, int64_t axis, const Tensor& index);
/// Picks entries index[j] (1-D, i32 or i64) of dim `axis`; repeats allowed. Backward
/// index-adds the gradient rows back (repeated indices accumulate).
Variable index_select(const Variable& x, int64_t axis, const Tensor& index);
/// out = mask != 0 ? value : x. mask (any dtype) broadcasts to x's shape. Zero gradient
/// where filled.
Variable masked_fill(const Variable& x, const Tensor& mask, double value);
/// out = cond != 0 ? a : b; cond (any dtype), a and b broadcast together. The gradient goes
/// to a where cond holds and to b elsewhere, summed back to each input's shape.
Variable where(const Tensor& cond, const Variable& a, const Variable& b);
/// Keeps x[..., r, c] with c - r <= k (last two dims, batched), zeros the rest.
Variable tril(const Variable& x, int64_t k = 0);
/// Keeps x[..., r, c] with c - r >= k (last two dims, batched), zeros the rest.
Variable triu(const Variable& x, int64_t k = 0);

}  // namespace rota
