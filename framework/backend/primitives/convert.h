// Fast dtype conversions on the hot path of mixed precision (f32 → bf16 operand rounding).
#pragma once

#include <cstdint>
#include <vector>

#include "framework/tensor/tensor.h"

namespace rota::backend {

/// dst[i] = float_to_bf16(src[i]) for i < n: round to nearest even, NaN kept quiet; bit for bit
/// the scalar conversion, written branch-free so the loop vectorises.
void float_to_bf16_array(const float* src, BF16* dst, int64_t n);

/// t (f32) rounded to a new bf16 tensor of the same shape, contiguous: threaded over the
/// elements when t is contiguous (Tensor::to otherwise).
Tensor to_bf16(const Tensor& t);

struct Bf16WithColumnSums {
  Tensor values;       // [R, C] bf16: to_bf16(x)
  Tensor column_sums;  // [C] f32: reduce_sum(x, {0})
};

/// One pass over x [R, C] (f32, contiguous) giving its bf16 rounding and its column sums — the
/// rounded gradient and the bias gradient of a bf16 linear's backward, which otherwise read
/// the gradient twice. Bit for bit to_bf16(x) and reduce_sum(x, {0}): rows are summed in
/// chunks of kSumChunk in f32, chunk sums added in double in row order (thread-independent).
Bf16WithColumnSums to_bf16_with_column_sums(const Tensor& x);

/// The last step of a chunked column sum: partial [chunks, C] holds the f32 sum of each chunk
/// of kSumChunk rows; the chunk sums are added in double in chunk order and rounded to f32,
/// giving reduce_sum(x, {0})'s bits. Shared by the fused kernels that sum columns.
Tensor column_sums_from_chunks(const std::vector<float>& partial, int64_t chunks, int64_t cols);

}  // namespace rota::backend
