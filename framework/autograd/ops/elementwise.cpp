// Element-wise ops: forward through backend kernels, backward as closed-form derivatives.
#include "framework/autograd/ops/elementwise.h"

#include "framework/autograd/function.h"
#include "framework/backend/primitives/elementwise.h"

namespace rota {

namespace b = backend;

namespace {

// y = op(x); backward is grad * op'(x), computed by the fused backward kernel. x and y are
// saved only when x needs a gradient.
Variable unary_op(b::UnaryOp op, const Variable& x, double param = 0.0) {
  Tensor y = b::unary(op, x.data(), param);
  if (!inspect_inputs({x}).any) return Variable(std::move(y), false);
  return record_op(b::unary_op_name(op), y, {x},
                   [op, param, xd = x.data(), y](const Tensor& g) -> std::vector<Tensor> {
                     return {b::unary_backward(op, xd, y, g, param)};
                   });
}

}  // namespace

Variable add(const Variable& a, const Variable& bv) {
  const auto rec = inspect_inputs({a, bv});
  return record_op("add", b::add(a.data(), bv.data()), {a, bv},
                   [needs = rec.needs, sa = a.shape(), sb = bv.shape()](const Tensor& g) {
                     return std::vector<Tensor>{needs[0] ? b::sum_to_shape(g, sa) : Tensor(),
                                                needs[1] ? b::sum_to_shape(g, sb) : Tensor()};
                   });
}

Variable sub(const Variable& a, const Variable& bv) {
  const auto rec = inspect_inputs({a, bv});
  return record_op("sub", b::sub(a.data(), bv.data()), {a, bv},
                   [needs = rec.needs, sa = a.shape(), sb = bv.shape()](const Tensor& g) {
                     return std::vector<Tensor>{
                         needs[0] ? b::sum_to_shape(g, sa) : Tensor(),
                         needs[1] ? b::sum_to_shape(b::neg(g), sb) : Tensor()};
                   });
}

Variable mul(const Variable& a, const Variable& bv) {
  const auto rec = inspect_inputs({a, bv});
  // d(ab)/da = b and d(ab)/db = a: each side saves only the other operand.
  return record_op(
      "mul", b::mul(a.data(), bv.data()), {a, bv},
      [needs = rec.needs, ad = rec.needs[1] ? a.data() : Tensor(),
       bd = rec.needs[0] ? bv.data() : Tensor(), sa = a.shape(), sb = bv.shape()](const Tensor& g) {
        return std::vector<Tensor>{needs[0] ? b::sum_to_shape(b::mul(g, bd), sa) : Tensor(),
                                   needs[1] ? b::sum_to_shape(b::mul(g, ad), sb) : Tensor()};
      });
}

Variable div(const Variable& a, const Variable& bv) {
  const auto rec = inspect_inputs({a, bv});
  Tensor out = b::div(a.data(), bv.data());
  // d(a/b)/da = 1/b, d(a/b)/db = -(a/b)/b.
  return record_op(
      "div", out, {a, bv},
      [needs = rec.needs, bd = bv.data(), out, sa = a.shape(), sb = bv.shape()](const Tensor& g) {
        return std::vector<Tensor>{
            needs[0] ? b::sum_to_shape(b::div(g, bd), sa) : Tensor(),
            needs[1] ? b::sum_to_shape(b::neg(b::div(b::mul(g, out), bd)), sb) : Tensor()};
      });
}

Variable pow(const Variable& a, const Variable& bv) {
  const auto rec = inspect_inputs({a, bv});
  Tensor out = b::binary(b::BinaryOp::kPow, a.data(), bv.data());
  // d(a^b)/da = b a^(b-1) = b * out / a ; d(a^b)/db = out * log(a).
  return record_op(
      "pow", out, {a, bv},
      [needs = rec.needs, ad = a.data(), bd = bv.data(), out, sa = a.shape(),
       sb = bv.shape()](const Tensor& g) {
        Tensor ga, gb;
        if (needs[0]) {
          const Tensor bm1 = b::add_scalar(bd, -1.0);
          ga = b::sum_to_shape(b::mul(g, b::mul(bd, b::binary(b::BinaryOp::kPow, ad, bm1))), sa);
        }
        if (needs[1])
          gb = b::sum_to_shape(b::mul(g, b::mul(out, b::unary(b::UnaryOp::kLog, ad))), sb);
        return std::vector<Tensor>{ga, gb};
      });
}

namespace {
// Gradient of max/min routes to the winning side; ties split the gradient in half.
Variable extremum(const char* name, b::BinaryOp op, b::BinaryOp win, const Variable& a,
                  const Variable& bv) {
  const auto rec = inspect_inputs({a, bv});
  return record_op(name, b::binary(op, a.data(), bv.data()), {a, bv},
                   [needs = rec.needs, ad = a.data(), bd = bv.data(), win](const Tensor& g) {
                     const Tensor a_wins = b::binary(win, ad, bd);
                     const Tensor tie = b::binary(b::BinaryOp::kEq, ad, bd);
                     const Tensor wa = b::sub(a_wins, b::mul_scalar(tie, 0.5));  // 1, 0.5 or 0
                     Tensor ga, gb;
                     if (needs[0]) ga = b::sum_to_shape(b::mul(g, wa), ad.shape());
                     if (needs[1])
                       gb = b::sum_to_shape(b::mul(g, b::add_scalar(b::neg(wa), 1.0)), bd.shape());
                     return std::vector<Tensor>{ga, gb};
                   });
}
}  // namespace

Variable maximum(const Variable& a, const Variable& bv) {
  return extremum("maximum", b::BinaryOp::kMaximum, b::BinaryOp::kGe, a, bv);
}

Variable minimum(const Variable& a, const Variable& bv) {
  return extremum("minimum", b::BinaryOp::kMinimum, b::BinaryOp::kLe, a, bv);
}

Variable add_scalar(const Variable& a, double s) {
  return unary_op(b::UnaryOp::kAddScalar, a, s);
}
Variable mul_scalar(const Variable& a, double s) {
  return unary_op(b::UnaryOp::kMulScalar, a, s);
}
Variable pow_scalar(const Variable& a, double e) {
  return unary_op(b::UnaryOp::kPow, a, e);
}
Variable rsub_scalar(const Variable& a, double s) {
  return add_scalar(neg(a), s);
}
Variable rdiv_scalar(const Variable& a, double s) {
  return mul_scalar(unary_op(b::UnaryOp::kReciprocal, a), s);
}

Variable neg(const Variable& x) {
  return unary_op(b::UnaryOp::kNeg, x);
}
Variable exp(const Variable& x) {
  return unary_op(b::UnaryOp::kExp, x);
}
Variable log(const Variable& x) {
  return unary_op(b::UnaryOp::kLog, x);
}
Variable sqrt(const Variable& x) {
  return unary_op(b::UnaryOp::kSqrt, x);
}
Variable rsqrt(const Variable& x) {
  return unary_op(b::UnaryOp::kRsqrt, x);
}
Variable abs(const Variable& x) {
  return unary_op(b::UnaryOp::kAbs, x);
}
Variable square(const Variable& x) {
  return unary_op(b::UnaryOp::kSquare, x);
}
Variable tanh(const Variable& x) {
  return unary_op(b::UnaryOp::kTanh, x);
}
Variable sigmoid(const Variable& x) {
  return unary_op(b::UnaryOp::kSigmoid, x);
}
Variable relu(const Variable& x) {
  return unary_op(b::UnaryOp::kRelu, x);
}
Variable elu(const Variable& x, double alpha) {
  return unary_op(b::UnaryOp::kElu, x, alpha);
}
Variable one_plus_elu(const Variable& x) {
  return unary_op(b::UnaryOp::kOnePlusElu, x);
}
Variable gelu(const Variable& x, bool tanh_approximation) {
  return unary_op(tanh_approximation ? b::UnaryOp::kGeluTanh : b::UnaryOp::kGeluErf, x);
}
Variable silu(const Variable& x) {
  return unary_op(b::UnaryOp::kSilu, x);
}
Variable sin(const Variable& x) {
  return unary_op(b::UnaryOp::kSin, x);
}
Variable cos(const Variable& x) {
  return unary_op(b::UnaryOp::kCos, x);
}
Variable clamp_min(const Variable& x, double low) {
  return unary_op(b::UnaryOp::kClampMin, x, low);
}
Variable clamp_max(const Variable& x, double high) {
  return unary_op(b::UnaryOp::kClampMax, x, high);
}
Variable clamp(const Variable& x, double low, double high) {
  ROTA_CHECK(low <= high, "clamp: low {} > high {}", low, high);
  return clamp_max(clamp_min(x, low), high);
}

}  // namespace rota
