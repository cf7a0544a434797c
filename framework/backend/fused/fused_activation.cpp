// Fused activation passes: per chunk of elements or rows, the activation or its derivative into a
// cache-resident buffer, column partial sums where needed, then the f32 or bf16 store.
#include "framework/backend/fused/fused_activation.h"

#include <algorithm>
#include <vector>

#include "framework/backend/cpu/parallel.h"
#include "framework/backend/primitives/convert.h"
#include "framework/backend/primitives/reduce.h"

namespace rota::backend {

Tensor activation_to_bf16(UnaryOp act, const Tensor& h_in, Bf16Rounding rounding) {
  ROTA_CHECK(h_in.dtype() == DType::kF32, "activation_to_bf16: h is {} {}, expected f32",
             dtype_name(h_in.dtype()), shape_str(h_in.shape()));
  const Tensor h = h_in.contiguous();
  Tensor out = Tensor::empty(h.shape(), rounded_dtype(rounding));
  const float* src = h.data<float>();
  constexpr int64_t kBlock = 4096;  // elements per buffer: 16 KB, stays in L1
  parallel_for((h.numel() + kBlock - 1) / kBlock, kBlock * 8, [&](int64_t b0, int64_t b1) {
    float buffer[kBlock];
    for (int64_t block = b0; block < b1; ++block) {
      const int64_t begin = block * kBlock;
      const int64_t n = std::min(kBlock, h.numel() - begin);
      unary_array(act, src + begin, buffer, n);
      store_rounded(buffer, out, begin, n, rounding);
    }
  });
  return out;
}

ActivationBackward activation_backward_with_column_sums(UnaryOp act, const Tensor& h_in,
                                                        const Tensor& dy_in,
                                                        Bf16Rounding rounding) {
  const char* op = "activation_backward_with_column_sums";
  ROTA_CHECK(h_in.dtype() == DType::kF32 && dy_in.dtype() == DType::kF32 && h_in.dim() == 2 &&
                 h_in.shape() == dy_in.shape(),
             "{}: h {} {} and dy {} {} must be 2-D f32 of one shape", op, dtype_name(h_in.dtype()),
             shape_str(h_in.shape()), dtype_name(dy_in.dtype()), shape_str(dy_in.shape()));
  ROTA_CHECK(derivative_needs_only_input(act), "{}: {}'s derivative needs the output", op,
             unary_op_name(act));
  const Tensor h = h_in.contiguous();
  const Tensor dy = dy_in.contiguous();
  const int64_t rows = h.size(0), cols = h.size(1);
  ActivationBackward out;
  if (cols == 1) {  // a single column: reduce_sum's contiguous path, reused for the same bits
    const Tensor dh = unary_backward(act, h, h, dy);
    out.column_sums = reduce_sum(dh, {0}, false);
    out.grad_input = rounding == Bf16Rounding::kToBf16         ? to_bf16(dh)
                     : rounding == Bf16Rounding::kToBf16Values ? round_to_bf16_values(dh)
                                                               : dh;
    return out;
  }
  const bool rounded = rounding != Bf16Rounding::kNone;
  out.grad_input = Tensor::empty({rows, cols}, rounded_dtype(rounding));
  const int64_t chunks = (rows + kSumChunk - 1) / kSumChunk;
  std::vector<float> partial(chunks * cols);  // [chunks, C]: f32 sums of each chunk's rows
  const float* ph = h.data<float>();
  const float* pdy = dy.data<float>();
  parallel_for(chunks, kSumChunk * cols * 8, [&](int64_t c0, int64_t c1) {
    std::vector<float> buffer(rounded ? kSumChunk * cols : 0);  // [kSumChunk, C]
    for (int64_t chunk = c0; chunk < c1; ++chunk) {
      const int64_t r0 = chunk * kSumChunk;
      const int64_t r1 = std::min(rows, r0 + kSumChunk);
      // dh rows of this chunk: into the buffer (rounded output) or straight into the f32 output.
      float* dh = rounded ? buffer.data() : out.grad_input.data<float>() + r0 * cols;
      unary_backward_array(act, ph + r0 * cols, pdy + r0 * cols, dh, (r1 - r0) * cols);
      // Column sums in reduce_sum's order: row r0, then + each later row, in f32.
      float* sums = partial.data() + chunk * cols;
      std::copy(dh, dh + cols, sums);
      for (int64_t r = 1; r < r1 - r0; ++r) {
        const float* row = dh + r * cols;
#pragma omp simd
        for (int64_t c = 0; c < cols; ++c) sums[c] += row[c];
      }
      if (rounded) store_rounded(dh, out.grad_input, r0 * cols, (r1 - r0) * cols, rounding);
    }
  });
  out.column_sums = column_sums_from_chunks(partial, chunks, cols);
  return out;
}

}  // namespace rota::backend
