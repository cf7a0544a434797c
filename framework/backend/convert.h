// Fast dtype conversions on the hot path of mixed precision (f32 → bf16 operand rounding).
#pragma once

#include <cstdint>

#include "framework/tensor/tensor.h"

namespace rota::backend {

/// dst[i] = float_to_bf16(src[i]) for i < n: round to nearest even, NaN kept quiet; bit for bit
/// the scalar conversion, written branch-free so the loop vectorises.
void float_to_bf16_array(const float* src, BF16* dst, int64_t n);

/// t (f32) rounded to a new bf16 tensor of the same shape, contiguous: threaded over the
/// elements when t is contiguous (Tensor::to otherwise).
Tensor to_bf16(const Tensor& t);

}  // namespace rota::backend
