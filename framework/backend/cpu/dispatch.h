// Calls a generic lambda with a value of the C++ element type matching a floating DType.
#pragma once

#include "framework/base/error.h"
#include "framework/tensor/dtype.h"

namespace rota::backend {

/// dispatch_floating(dtype, op, [&](auto tag) { using T = decltype(tag); ... }) for f32 / f64.
/// Kernels compute in f32 or f64; other dtypes are an error naming the op (bf16 compute goes
/// through oneDNN matmul only, see backend/matmul.h).
template <typename F>
decltype(auto) dispatch_floating(DType dtype, const char* op, F&& f) {
  switch (dtype) {
    case DType::kF32:
      return f(float{});
    case DType::kF64:
      return f(double{});
    default:
      fail("{}: dtype {} is not supported (expected f32 or f64)", op, dtype_name(dtype));
  }
}

/// Same for integer index tensors (i32 / i64).
template <typename F>
decltype(auto) dispatch_index(DType dtype, const char* op, F&& f) {
  switch (dtype) {
    case DType::kI32:
      return f(int32_t{});
    case DType::kI64:
      return f(int64_t{});
    default:
      fail("{}: index dtype {} is not supported (expected i32 or i64)", op, dtype_name(dtype));
  }
}

}  // namespace rota::backend
