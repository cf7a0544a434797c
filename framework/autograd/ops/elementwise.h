// Differentiable element-wise ops: arithmetic with broadcasting, scalar forms, activations.
#pragma once

#include "framework/autograd/variable.h"

namespace rota {

// Binary arithmetic with NumPy broadcasting. Gradients are summed back to each input's shape.
Variable add(const Variable& a, const Variable& b);
Variable sub(const Variable& a, const Variable& b);
Variable mul(const Variable& a, const Variable& b);
Variable div(const Variable& a, const Variable& b);
/// a ** b element-wise (a > 0 where b's gradient is needed).
Variable pow(const Variable& a, const Variable& b);
Variable maximum(const Variable& a, const Variable& b);
Variable minimum(const Variable& a, const Variable& b);

// Scalar forms.
Variable add_scalar(const Variable& a, double s);
Variable mul_scalar(const Variable& a, double s);
Variable pow_scalar(const Variable& a, double exponent);
/// s - a.
Variable rsub_scalar(const Variable& a, double s);
/// s / a.
Variable rdiv_scalar(const Variable& a, double s);

// Unary maps.
Variable neg(const Variable& x);
Variable exp(const Variable& x);
Variable log(const Variable& x);
Variable sqrt(const Variable& x);
Variable rsqrt(const Variable& x);
Variable abs(const Variable& x);
Variable square(const Variable& x);
Variable tanh(const Variable& x);
Variable sigmoid(const Variable& x);
Variable relu(const Variable& x);
Variable elu(const Variable& x, double alpha = 1.0);
/// 1 + elu(x): strictly positive, the default linear-attention feature map.
Variable one_plus_elu(const Variable& x);
/// GELU, exact erf form (approximate=false) or the tanh approximation.
Variable gelu(const Variable& x, bool tanh_approximation = false);
Variable silu(const Variable& x);
Variable sin(const Variable& x);
Variable cos(const Variable& x);
/// Clamps to [low, high]; gradient passes where low <= x <= high.
Variable clamp(const Variable& x, double low, double high);
Variable clamp_min(const Variable& x, double low);
Variable clamp_max(const Variable& x, double high);

inline Variable operator+(const Variable& a, const Variable& b) {
  return add(a, b);
}
inline Variable operator-(const Variable& a, const Variable& b) {
  return sub(a, b);
}
inline Variable operator*(const Variable& a, const Variable& b) {
  return mul(a, b);
}
inline Variable operator/(const Variable& a, const Variable& b) {
  return div(a, b);
}
inline Variable operator-(const Variable& a) {
  return neg(a);
}
inline Variable operator+(const Variable& a, double s) {
  return add_scalar(a, s);
}
inline Variable operator+(double s, const Variable& a) {
  return add_scalar(a, s);
}
inline Variable operator-(const Variable& a, double s) {
  return add_scalar(a, -s);
}
inline Variable operator-(double s, const Variable& a) {
  return rsub_scalar(a, s);
}
inline Variable operator*(const Variable& a, double s) {
  return mul_scalar(a, s);
}
inline Variable operator*(double s, const Variable& a) {
  return mul_scalar(a, s);
}
inline Variable operator/(const Variable& a, double s) {
  return mul_scalar(a, 1.0 / s);
}
inline Variable operator/(double s, const Variable& a) {
  return rdiv_scalar(a, s);
}

}  // namespace rota
