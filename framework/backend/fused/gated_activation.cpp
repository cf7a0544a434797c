// Fused gated activation (SwiGLU / GeGLU): forward and backward row by row through L1 buffers;
// f64 goes through the composed elementwise ops.
#include "framework/backend/fused/gated_activation.h"

#include <vector>

#include "framework/backend/cpu/parallel.h"
#include "framework/backend/primitives/convert.h"
#include "framework/backend/primitives/indexing.h"

namespace rota::backend {

namespace {

/// Checks gu [R, 2H] (and dy [R, H]) and returns H.
int64_t check_shapes(const char* op, UnaryOp act, const Tensor& gu, const Tensor* dy) {
  ROTA_CHECK(gu.dim() == 2 && gu.size(1) % 2 == 0 && gu.size(1) > 0,
             "{}: gu {} must be [R, 2H] (gate then up)", op, shape_str(gu.shape()));
  ROTA_CHECK(gu.dtype() == DType::kF32 || gu.dtype() == DType::kF64,
             "{}: gu is {}, expected f32 or f64", op, dtype_name(gu.dtype()));
  ROTA_CHECK(derivative_needs_only_input(act),
             "{}: activation {} is not supported (relu, gelu, "
             "gelu_tanh, silu)",
             op, unary_op_name(act));
  const int64_t h = gu.size(1) / 2;
  if (dy != nullptr) {
    ROTA_CHECK(dy->dim() == 2 && dy->size(0) == gu.size(0) && dy->size(1) == h &&
                   dy->dtype() == gu.dtype(),
               "{}: dy {} {} must be [{}, {}] {}", op, dtype_name(dy->dtype()),
               shape_str(dy->shape()), gu.size(0), h, dtype_name(gu.dtype()));
  }
  return h;
}

}  // namespace

Tensor gated_activation(UnaryOp act, const Tensor& gu_in) {
  const int64_t hidden = check_shapes("gated_activation", act, gu_in, nullptr);
  const int64_t rows = gu_in.size(0);
  if (gu_in.dtype() == DType::kF64) {  // gradient checks: the composed ops
    const Tensor gate = gu_in.narrow(1, 0, hidden);
    const Tensor up = gu_in.narrow(1, hidden, hidden);
    return mul(unary(act, gate), up);
  }
  const Tensor gu = gu_in.contiguous();
  Tensor y = Tensor::empty({rows, hidden}, DType::kF32);
  const float* src = gu.data<float>();
  float* dst = y.data<float>();
  parallel_for(rows, hidden * 16, [&](int64_t r0, int64_t r1) {
    std::vector<float> buffer(hidden);  // act(gate) of one row
    for (int64_t r = r0; r < r1; ++r) {
      const float* gate = src + r * 2 * hidden;
      const float* up = gate + hidden;
      unary_array(act, gate, buffer.data(), hidden);
      float* out = dst + r * hidden;
#pragma omp simd
      for (int64_t j = 0; j < hidden; ++j) out[j] = buffer[j] * up[j];
    }
  });
  return y;
}

Tensor gated_activation_to_bf16(UnaryOp act, const Tensor& gu_in, Bf16Rounding rounding) {
  const int64_t hidden = check_shapes("gated_activation_to_bf16", act, gu_in, nullptr);
  ROTA_CHECK(gu_in.dtype() == DType::kF32, "gated_activation_to_bf16: gu is {}, expected f32",
             dtype_name(gu_in.dtype()));
  const int64_t rows = gu_in.size(0);
  const Tensor gu = gu_in.contiguous();
  Tensor y = Tensor::empty({rows, hidden}, rounded_dtype(rounding));
  const float* src = gu.data<float>();
  parallel_for(rows, hidden * 16, [&](int64_t r0, int64_t r1) {
    std::vector<float> buffer(hidden);  // act(gate) ⊙ up of one row, then rounded
    for (int64_t r = r0; r < r1; ++r) {
      const float* gate = src + r * 2 * hidden;
      const float* up = gate + hidden;
      unary_array(act, gate, buffer.data(), hidden);
#pragma omp simd
      for (int64_t j = 0; j < hidden; ++j) buffer[j] *= up[j];
      store_rounded(buffer.data(), y, r * hidden, hidden, rounding);
    }
  });
  return y;
}

Tensor gated_activation_backward(UnaryOp act, const Tensor& gu_in, const Tensor& dy_in) {
  const int64_t hidden = check_shapes("gated_activation_backward", act, gu_in, &dy_in);
  const int64_t rows = gu_in.size(0);
  if (gu_in.dtype() == DType::kF64) {
    const Tensor gate = gu_in.narrow(1, 0, hidden);
    const Tensor up = gu_in.narrow(1, hidden, hidden);
    const Tensor dgate = unary_backward(act, gate, gate, mul(dy_in, up));  // [R, H]
    const Tensor dup = mul(dy_in, unary(act, gate));                       // [R, H]
    return concat({dgate, dup}, 1);
  }
  const Tensor gu = gu_in.contiguous();
  const Tensor dy = dy_in.contiguous();
  Tensor dgu = Tensor::empty({rows, 2 * hidden}, DType::kF32);
  const float* src = gu.data<float>();
  const float* pdy = dy.data<float>();
  float* dst = dgu.data<float>();
  parallel_for(rows, hidden * 32, [&](int64_t r0, int64_t r1) {
    std::vector<float> buffer(hidden);  // act(gate), then dy ⊙ up, of one row
    for (int64_t r = r0; r < r1; ++r) {
      const float* gate = src + r * 2 * hidden;
      const float* up = gate + hidden;
      const float* g = pdy + r * hidden;
      float* dgate = dst + r * 2 * hidden;
      float* dup = dgate + hidden;
      unary_array(act, gate, buffer.data(), hidden);
#pragma omp simd
      for (int64_t j = 0; j < hidden; ++j) {
        dup[j] = g[j] * buffer[j];
        buffer[j] = g[j] * up[j];
      }
      unary_backward_array(act, gate, buffer.data(), dgate, hidden);
    }
  });
  return dgu;
}

}  // namespace rota::backend
