// Element-wise tensor kernels: unary maps with their derivatives, broadcasting binary ops.
#pragma once

#include "framework/tensor/tensor.h"

namespace rota::backend {

/// Unary maps. `param` is used by kElu (alpha), kPow (exponent), kAddScalar, kMulScalar,
/// kClampMin, kClampMax (the bound) and kLeakyRelu (slope); ignored otherwise.
enum class UnaryOp {
  kNeg,
  kExp,
  kLog,
  kSqrt,
  kRsqrt,
  kAbs,
  kTanh,
  kSigmoid,
  kRelu,
  kElu,
  kGeluErf,
  kGeluTanh,
  kSilu,
  kSin,
  kCos,
  kPow,
  kAddScalar,
  kMulScalar,
  kClampMin,
  kClampMax,
  kSquare,
  kReciprocal,
  kOnePlusElu,  // 1 + elu(x): the positive feature map of linear attention
};

const char* unary_op_name(UnaryOp op);

/// y = op(x) elementwise; x is f32 or f64, any strides (a view with unit-stride rows is read
/// in place); y is contiguous.
Tensor unary(UnaryOp op, const Tensor& x, double param = 0.0);
/// grad_x = grad_y * op'(x) (y = op(x) may be used by ops whose derivative is cheaper from y).
/// All three have the same shape. For the ops of derivative_needs_only_output, x is not read
/// and grad_x is laid out like x when x is a strided view with unit-stride rows (dense, in x's
/// stride order: the permute/reshape that made the view then needs no copy going back);
/// otherwise grad_x is contiguous.
Tensor unary_backward(UnaryOp op, const Tensor& x, const Tensor& y, const Tensor& grad_y,
                      double param = 0.0);
/// True for the ops whose derivative is computed from y = op(x) alone (or needs neither):
/// kNeg, kExp, kSqrt, kRsqrt, kTanh, kSigmoid, kOnePlusElu, kAddScalar, kMulScalar, kReciprocal.
bool derivative_needs_only_output(UnaryOp op);
/// y[i] = op(x[i]) over [n] f32 arrays on the calling thread: bit for bit what unary gives.
/// For fused kernels that process rows in chunks.
void unary_array(UnaryOp op, const float* x, float* y, int64_t n, float param = 0.0f);
/// True for the activations whose derivative depends on x alone: kRelu, kGeluErf, kGeluTanh,
/// kSilu (the ones unary_backward_array takes).
bool derivative_needs_only_input(UnaryOp op);
/// grad_x[i] = grad_y[i] · op'(x[i]) over [n] f32 arrays on the calling thread: bit for bit what
/// unary_backward gives. For fused kernels that process rows in chunks. op must satisfy
/// derivative_needs_only_input.
void unary_backward_array(UnaryOp op, const float* x, const float* grad_y, float* grad_x,
                          int64_t n);

enum class BinaryOp {
  kAdd,
  kSub,
  kMul,
  kDiv,
  kMaximum,
  kMinimum,
  kPow,
  // Comparisons produce 1.0 / 0.0 in the input dtype.
  kEq,
  kNe,
  kLt,
  kLe,
  kGt,
  kGe,
};

const char* binary_op_name(BinaryOp op);

/// out = a op b with NumPy broadcasting; a and b must share a floating dtype.
Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b);
/// a += b in place (b broadcast to a's shape); a must be contiguous.
void add_inplace(Tensor& a, const Tensor& b);
/// a += alpha * b in place (same shape, both contiguous).
void axpy_inplace(Tensor& a, double alpha, const Tensor& b);
/// Sums `grad` (shaped like a broadcast result) down to `shape`, undoing broadcasting.
Tensor sum_to_shape(const Tensor& grad, const Shape& shape);

// Convenience wrappers used throughout backward code.
inline Tensor add(const Tensor& a, const Tensor& b) {
  return binary(BinaryOp::kAdd, a, b);
}
inline Tensor sub(const Tensor& a, const Tensor& b) {
  return binary(BinaryOp::kSub, a, b);
}
inline Tensor mul(const Tensor& a, const Tensor& b) {
  return binary(BinaryOp::kMul, a, b);
}
inline Tensor div(const Tensor& a, const Tensor& b) {
  return binary(BinaryOp::kDiv, a, b);
}
inline Tensor neg(const Tensor& a) {
  return unary(UnaryOp::kNeg, a);
}
inline Tensor mul_scalar(const Tensor& a, double s) {
  return unary(UnaryOp::kMulScalar, a, s);
}
inline Tensor add_scalar(const Tensor& a, double s) {
  return unary(UnaryOp::kAddScalar, a, s);
}

}  // namespace rota::backend
