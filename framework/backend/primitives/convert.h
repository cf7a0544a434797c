// Fast dtype conversions on the hot path of mixed precision (f32 → bf16 operand rounding).
#pragma once

#include <cstdint>
#include <vector>

#include "framework/tensor/tensor.h"

namespace rota::backend {

/// dst[i] = float_to_bf16(src[i]) for i < n: round to nearest even, NaN kept quiet; bit for bit
/// the scalar conversion, written branch-free so the loop vectorises.
void float_to_bf16_array(const float* src, BF16* dst, int64_t n);

/// How a fused kernel stores a result that feeds a bf16 product: in f32 unrounded (kNone), rounded
/// to a bf16 tensor (kToBf16: oneDNN multiplies bf16), or rounded to bf16 but kept as an f32
/// tensor holding those values (kToBf16Values: the portable path, where oneDNN has no bf16
/// kernel and multiplies the rounded values in f32).
enum class Bf16Rounding { kNone, kToBf16, kToBf16Values };

/// The dtype a kernel's rounded result is stored in: bf16 for kToBf16, else f32.
DType rounded_dtype(Bf16Rounding rounding);

/// Stores src [n] f32 into out (a contiguous tensor of rounded_dtype(rounding)) from element
/// `at` on: copied (kNone), rounded to bf16 bits (kToBf16) or to bf16 values in f32
/// (kToBf16Values). Bit for bit to_bf16 / round_to_bf16_values of those elements.
void store_rounded(const float* src, const Tensor& out, int64_t at, int64_t n,
                   Bf16Rounding rounding);

/// t (f32) rounded to a new bf16 tensor of the same shape, contiguous: threaded over the
/// elements when t is contiguous (Tensor::to otherwise).
Tensor to_bf16(const Tensor& t);

/// t (f32) rounded to bf16 but kept as a new f32 tensor holding those values, contiguous: bit
/// for bit to_bf16(t).to(kF32) in one pass (threaded when t is contiguous). The operands of a
/// bf16 product where oneDNN has no bf16 kernel.
Tensor round_to_bf16_values(const Tensor& t);

struct Bf16WithColumnSums {
  Tensor values;       // [R, C]: to_bf16(x) (or round_to_bf16_values(x), see below)
  Tensor column_sums;  // [C] f32: reduce_sum(x, {0})
};

/// One pass over x [R, C] (f32, contiguous) giving its bf16 rounding and its column sums — the
/// rounded gradient and the bias gradient of a bf16 linear's backward, which otherwise read
/// the gradient twice. Bit for bit to_bf16(x) (kToBf16) or round_to_bf16_values(x)
/// (kToBf16Values; kNone is refused) and reduce_sum(x, {0}): rows are summed in chunks of
/// kSumChunk in f32, chunk sums added in double in row order (thread-independent).
Bf16WithColumnSums to_bf16_with_column_sums(const Tensor& x,
                                            Bf16Rounding rounding = Bf16Rounding::kToBf16);

/// The last step of a chunked column sum: partial [chunks, C] holds the f32 sum of each chunk
/// of kSumChunk rows; the chunk sums are added in double in chunk order and rounded to f32,
/// giving reduce_sum(x, {0})'s bits. Shared by the fused kernels that sum columns.
Tensor column_sums_from_chunks(const std::vector<float>& partial, int64_t chunks, int64_t cols);

}  // namespace rota::backend
