// Seeded dropout kernel: the mask is a pure function of (seed, element index), never stored.
#pragma once

#include <cstdint>

#include "framework/tensor/tensor.h"

namespace rota::backend {

/// Elements per random stream. Element i belongs to block i / kDropoutBlock, whose stream is a
/// xoshiro256** generator seeded from (seed, block). Blocks are fixed, so the mask does not
/// depend on the thread count or on how the work is split.
constexpr int64_t kDropoutBlock = 4096;

/// y = x * mask with mask_i = keep_i / (1 - p) and P(keep_i) = 1 - p; x is f32/f64, any
/// strides, treated in row-major order; y is contiguous. p in [0, 1). The same (seed, p, numel)
/// always gives the same mask, so the backward is dropout_apply(grad_y, p, seed).
Tensor dropout_apply(const Tensor& x, double p, uint64_t seed);

/// The mask itself ({0, 1 / (1 - p)} values) for `shape`, for tests and inspection.
Tensor dropout_mask(const Shape& shape, DType dtype, double p, uint64_t seed);

}  // namespace rota::backend
