// Branch-free f32 → bf16 rounding over arrays, threaded for tensors.
#include "framework/backend/primitives/convert.h"

#include <algorithm>
#include <vector>

#include "framework/backend/cpu/parallel.h"
#include "framework/backend/cpu/vector_math.h"
#include "framework/backend/primitives/reduce.h"
#include "framework/base/error.h"

namespace rota::backend {

void float_to_bf16_array(const float* src, BF16* dst, int64_t n) {
  static_assert(sizeof(BF16) == sizeof(uint16_t));
  // The vector_math build for this CPU (16 lanes with AVX-512; the portable SSE2 build packs
  // 8 per iteration with shuffles and was 4 % of a bf16 training step).
  static const auto round = vecmath::kernels().round_to_bf16;
  round(src, reinterpret_cast<uint16_t*>(dst), n);
}

Tensor to_bf16(const Tensor& t) {
  if (t.dtype() != DType::kF32 || !t.is_contiguous()) return t.to(DType::kBF16);
  Tensor out = Tensor::empty(t.shape(), DType::kBF16);
  const float* src = t.data<float>();
  BF16* dst = out.data<BF16>();
  parallel_for(t.numel(), 1, [&](int64_t begin, int64_t end) {
    float_to_bf16_array(src + begin, dst + begin, end - begin);
  });
  return out;
}

DType rounded_dtype(Bf16Rounding rounding) {
  return rounding == Bf16Rounding::kToBf16 ? DType::kBF16 : DType::kF32;
}

void store_rounded(const float* src, const Tensor& out, int64_t at, int64_t n,
                   Bf16Rounding rounding) {
  ROTA_CHECK(out.is_contiguous() && out.dtype() == rounded_dtype(rounding) && at >= 0 &&
                 at + n <= out.numel(),
             "store_rounded: {} elements at {} into a {} {} tensor", n, at, dtype_name(out.dtype()),
             shape_str(out.shape()));
  switch (rounding) {
    case Bf16Rounding::kNone:
      std::copy(src, src + n, out.data<float>() + at);
      return;
    case Bf16Rounding::kToBf16:
      float_to_bf16_array(src, out.data<BF16>() + at, n);
      return;
    case Bf16Rounding::kToBf16Values: {
      static const auto round = vecmath::kernels().round_to_bf16_value;
      round(src, out.data<float>() + at, n);
      return;
    }
  }
}

Tensor round_to_bf16_values(const Tensor& t) {
  if (t.dtype() != DType::kF32 || !t.is_contiguous()) return to_bf16(t).to(DType::kF32);
  static const auto round = vecmath::kernels().round_to_bf16_value;
  Tensor out = Tensor::empty(t.shape(), DType::kF32);
  const float* src = t.data<float>();
  float* dst = out.data<float>();
  parallel_for(t.numel(), 1,
               [&](int64_t begin, int64_t end) { round(src + begin, dst + begin, end - begin); });
  return out;
}

Bf16WithColumnSums to_bf16_with_column_sums(const Tensor& x, Bf16Rounding rounding) {
  ROTA_CHECK(x.dtype() == DType::kF32 && x.dim() == 2 && x.is_contiguous(),
             "to_bf16_with_column_sums: x {} {} must be a contiguous 2-D f32 tensor",
             dtype_name(x.dtype()), shape_str(x.shape()));
  ROTA_CHECK(rounding != Bf16Rounding::kNone, "to_bf16_with_column_sums: no rounding asked");
  const int64_t rows = x.size(0), cols = x.size(1);
  if (cols == 1) {
    // A single column is a contiguous sum, which reduce_sum adds with per-lane partials: reuse
    // it so the bits still match.
    return {rounding == Bf16Rounding::kToBf16 ? to_bf16(x) : round_to_bf16_values(x),
            reduce_sum(x, {0}, false)};
  }
  Bf16WithColumnSums out{Tensor::empty({rows, cols}, rounded_dtype(rounding)), Tensor()};
  const int64_t chunks = (rows + kSumChunk - 1) / kSumChunk;
  std::vector<float> partial(chunks * cols);  // [chunks, C]: f32 sum of each chunk's rows
  const float* src = x.data<float>();
  parallel_for(chunks, kSumChunk * cols * 2, [&](int64_t c0, int64_t c1) {
    for (int64_t chunk = c0; chunk < c1; ++chunk) {
      const int64_t r0 = chunk * kSumChunk;
      const int64_t r1 = std::min(rows, r0 + kSumChunk);
      float* sums = partial.data() + chunk * cols;
      std::copy(src + r0 * cols, src + (r0 + 1) * cols, sums);
      for (int64_t r = r0 + 1; r < r1; ++r) {
        const float* row = src + r * cols;
#pragma omp simd
        for (int64_t c = 0; c < cols; ++c) sums[c] += row[c];
      }
      store_rounded(src + r0 * cols, out.values, r0 * cols, (r1 - r0) * cols, rounding);
    }
  });
  out.column_sums = column_sums_from_chunks(partial, chunks, cols);
  return out;
}

Tensor column_sums_from_chunks(const std::vector<float>& partial, int64_t chunks, int64_t cols) {
  ROTA_CHECK(static_cast<int64_t>(partial.size()) == chunks * cols,
             "column_sums_from_chunks: {} partial sums for {} chunks of {} columns", partial.size(),
             chunks, cols);
  std::vector<double> totals(cols, 0.0);
  for (int64_t chunk = 0; chunk < chunks; ++chunk) {
    const float* sums = partial.data() + chunk * cols;
    for (int64_t c = 0; c < cols; ++c) totals[c] += sums[c];
  }
  Tensor out = Tensor::empty({cols}, DType::kF32);
  float* column_sums = out.data<float>();
  for (int64_t c = 0; c < cols; ++c) column_sums[c] = static_cast<float>(totals[c]);
  return out;
}

}  // namespace rota::backend
