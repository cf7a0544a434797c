// Data-movement kernels: concat, strided copy, gather / scatter-add, index_select / index_add,
// masked_fill, where and triangular (tril/triu) masks.
#pragma once

#include <cstdint>
#include <vector>

#include "framework/tensor/tensor.h"

namespace rota::backend {

/// Concatenates `parts` along `axis` (negative counts from the end). All parts share dtype and
/// rank and agree in every other dim. Any dtype. Output is contiguous.
Tensor concat(const std::vector<Tensor>& parts, int64_t axis);

/// Copies src into the elements of dst (same shape and dtype; dst may be any strided view,
/// e.g. a slice of a larger tensor). Any dtype. Parallel over rows.
void copy_into(const Tensor& dst, const Tensor& src);

/// torch.gather: out[..., j, ...] = x[..., index[..., j, ...], ...] along `axis`.
/// index has x's rank and index.size(d) <= x.size(d) for d != axis; out has index's shape.
/// Any dtype for x; index i32 or i64.
Tensor gather(const Tensor& x, int64_t axis, const Tensor& index);

/// The adjoint of gather: zeros(shape), then out[..., index[p], ...] += src[p] along `axis` for
/// every position p of index (src has index's shape). Repeated indices accumulate.
/// Deterministic: each output element sums its contributions in index order. f32 / f64.
Tensor scatter_add(const Shape& shape, int64_t axis, const Tensor& index, const Tensor& src);

/// out = x with dim `axis` replaced by index (1-D): out.select(axis, j) = x.select(axis, index[j]).
/// Any dtype for x; index i32 or i64.
Tensor index_select(const Tensor& x, int64_t axis, const Tensor& index);

/// The adjoint of index_select: zeros(shape), then out.select(axis, index[j]) +=
/// src.select(axis, j). Repeated indices accumulate, deterministically (index order). f32 / f64.
Tensor index_add(const Shape& shape, int64_t axis, const Tensor& index, const Tensor& src);

/// out = mask != 0 ? value : x, with mask (any dtype) broadcast to x's shape. Any dtype for x.
Tensor masked_fill(const Tensor& x, const Tensor& mask, double value);

/// out = cond != 0 ? a : b, all three broadcast together. cond any dtype; a and b share a dtype.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);

/// Lower triangle of the last two dims: keeps x[..., r, c] where c - r <= k, zeros elsewhere.
Tensor tril(const Tensor& x, int64_t k = 0);
/// Upper triangle of the last two dims: keeps x[..., r, c] where c - r >= k, zeros elsewhere.
Tensor triu(const Tensor& x, int64_t k = 0);

/// [rows, cols] mask with 1 where c - r <= k, 0 elsewhere (k = 0: causal mask incl. diagonal).
Tensor tril_mask(int64_t rows, int64_t cols, int64_t k = 0, DType dtype = DType::kF32);
/// [rows, cols] mask with 1 where c - r >= k, 0 elsewhere.
Tensor triu_mask(int64_t rows, int64_t cols, int64_t k = 0, DType dtype = DType::kF32);

}  // namespace rota::backend
