// Differentiable shape and view ops: reshape, permute, slice, expand, concat, split, stack...
#pragma once

#include <cstdint>
#include <vector>

#include "framework/autograd/variable.h"

namespace rota {

// Views: the result shares storage with x (writes to x show through), and the backward maps
// the gradient back onto x's shape. Gradients returned by view backwards may be views too.

/// x with a new shape (one dim may be -1): a view when x's strides allow it, otherwise a copy.
Variable reshape(const Variable& x, const Shape& shape);
/// x with a new shape (one dim may be -1); always a view, throws when strides do not allow one.
Variable view(const Variable& x, const Shape& shape);
/// Merges dims start_dim..end_dim (inclusive, negative counts from the end) into one.
/// A 0-dim x becomes [1].
Variable flatten(const Variable& x, int64_t start_dim = 0, int64_t end_dim = -1);
/// Reorders dims: out.size(i) = x.size(order[i]). View.
Variable permute(const Variable& x, const std::vector<int64_t>& order);
/// Swaps two dims. View.
Variable transpose(const Variable& x, int64_t d0, int64_t d1);
/// Elements start, start+step, ... < end along dim (negative start/end count from the end;
/// both clamped to the size). View; backward writes the gradient into a zero tensor.
Variable slice(const Variable& x, int64_t dim, int64_t start, int64_t end, int64_t step = 1);
/// Elements [start, start + length) along dim (must lie inside x). View.
Variable narrow(const Variable& x, int64_t dim, int64_t start, int64_t length);
/// Broadcasts size-1 dims (and new leading dims) to `shape` with zero strides. View; backward
/// sums the gradient back to x's shape.
Variable expand(const Variable& x, const Shape& shape);
/// Inserts a size-1 dim at `dim` (in [-x.dim()-1, x.dim()]). View.
Variable unsqueeze(const Variable& x, int64_t dim);
/// Removes dim `dim`, which must have size 1. View.
Variable squeeze(const Variable& x, int64_t dim);
/// Removes every size-1 dim. View.
Variable squeeze(const Variable& x);
/// x itself when already contiguous, otherwise a contiguous copy; gradient passes through.
Variable contiguous(const Variable& x);

// Joining and splitting.

/// Concatenates along axis; all inputs share dtype, rank and every other dim. A copy.
Variable concat(const std::vector<Variable>& xs, int64_t axis = 0);
/// Splits along axis into pieces of the given sizes (which must sum to x.size(axis)). Each
/// piece is a view; outputs whose gradient never arrives contribute zeros.
std::vector<Variable> split(const Variable& x, const std::vector<int64_t>& sizes, int64_t axis = 0);
/// Splits along axis into pieces of ceil(size / n) (the last may be smaller), as torch.chunk:
/// this can give fewer than n pieces (size 6, n 4 -> 2,2,2). A zero-size dim gives n empty
/// pieces. Views.
std::vector<Variable> chunk(const Variable& x, int64_t n, int64_t axis = 0);
/// Stacks same-shaped inputs along a new dim `axis` (in [-rank-1, rank]). A copy.
Variable stack(const std::vector<Variable>& xs, int64_t axis = 0);

}  // namespace rota
