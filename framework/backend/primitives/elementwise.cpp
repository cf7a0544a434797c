// Element-wise kernels: OpenMP over contiguous ranges, inner loops simple enough to vectorise.
#include "framework/backend/primitives/elementwise.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "framework/backend/cpu/dispatch.h"
#include "framework/backend/cpu/parallel.h"
#include "framework/backend/cpu/vector_math.h"
#include "framework/backend/primitives/reduce.h"
#include "framework/tensor/strided_loop.h"

namespace rota::backend {

const char* unary_op_name(UnaryOp op) {
  switch (op) {
    case UnaryOp::kNeg:
      return "neg";
    case UnaryOp::kExp:
      return "exp";
    case UnaryOp::kLog:
      return "log";
    case UnaryOp::kSqrt:
      return "sqrt";
    case UnaryOp::kRsqrt:
      return "rsqrt";
    case UnaryOp::kAbs:
      return "abs";
    case UnaryOp::kTanh:
      return "tanh";
    case UnaryOp::kSigmoid:
      return "sigmoid";
    case UnaryOp::kRelu:
      return "relu";
    case UnaryOp::kElu:
      return "elu";
    case UnaryOp::kGeluErf:
      return "gelu";
    case UnaryOp::kGeluTanh:
      return "gelu_tanh";
    case UnaryOp::kSilu:
      return "silu";
    case UnaryOp::kSin:
      return "sin";
    case UnaryOp::kCos:
      return "cos";
    case UnaryOp::kPow:
      return "pow";
    case UnaryOp::kAddScalar:
      return "add_scalar";
    case UnaryOp::kMulScalar:
      return "mul_scalar";
    case UnaryOp::kClampMin:
      return "clamp_min";
    case UnaryOp::kClampMax:
      return "clamp_max";
    case UnaryOp::kSquare:
      return "square";
    case UnaryOp::kReciprocal:
      return "reciprocal";
    case UnaryOp::kOnePlusElu:
      return "one_plus_elu";
  }
  return "?";
}

const char* binary_op_name(BinaryOp op) {
  switch (op) {
    case BinaryOp::kAdd:
      return "add";
    case BinaryOp::kSub:
      return "sub";
    case BinaryOp::kMul:
      return "mul";
    case BinaryOp::kDiv:
      return "div";
    case BinaryOp::kMaximum:
      return "maximum";
    case BinaryOp::kMinimum:
      return "minimum";
    case BinaryOp::kPow:
      return "pow";
    case BinaryOp::kEq:
      return "eq";
    case BinaryOp::kNe:
      return "ne";
    case BinaryOp::kLt:
      return "lt";
    case BinaryOp::kLe:
      return "le";
    case BinaryOp::kGt:
      return "gt";
    case BinaryOp::kGe:
      return "ge";
  }
  return "?";
}

namespace {

constexpr double kSqrt2OverPi = 0.79788456080286535587989211986876;
constexpr double kInvSqrt2 = 0.70710678118654752440084436210485;
constexpr double kInvSqrt2Pi = 0.39894228040143267793994605993438;

// condition ? a : b without a branch, for float or double. GCC keeps a float `?:` as a branch
// (and then does not vectorise the loop); when the condition is the sign of the data, that
// branch mispredicts on about every other element: ReLU's backward ran at a fifth of the
// memory bandwidth. Both arms are computed, so they must be cheap and side-effect free.
template <typename T>
inline T pick(bool condition, T a, T b) {
  using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  const Bits mask = Bits(0) - static_cast<Bits>(condition);
  return std::bit_cast<T>((std::bit_cast<Bits>(a) & mask) | (std::bit_cast<Bits>(b) & ~mask));
}

// y = op(x) for one element. T is float or double.
template <UnaryOp kOp, typename T>
inline T unary_value(T x, T p) {
  if constexpr (kOp == UnaryOp::kNeg) return -x;
  if constexpr (kOp == UnaryOp::kExp) return std::exp(x);
  if constexpr (kOp == UnaryOp::kLog) return std::log(x);
  if constexpr (kOp == UnaryOp::kSqrt) return std::sqrt(x);
  if constexpr (kOp == UnaryOp::kRsqrt) return T(1) / std::sqrt(x);
  if constexpr (kOp == UnaryOp::kAbs) return std::abs(x);
  if constexpr (kOp == UnaryOp::kTanh) return std::tanh(x);
  if constexpr (kOp == UnaryOp::kSigmoid) return T(1) / (T(1) + std::exp(-x));
  if constexpr (kOp == UnaryOp::kRelu) return pick(x > T(0), x, T(0));
  if constexpr (kOp == UnaryOp::kElu) return x > T(0) ? x : p * (std::exp(x) - T(1));
  if constexpr (kOp == UnaryOp::kOnePlusElu) return x > T(0) ? x + T(1) : std::exp(x);
  if constexpr (kOp == UnaryOp::kGeluErf) return T(0.5) * x * (T(1) + std::erf(x * T(kInvSqrt2)));
  if constexpr (kOp == UnaryOp::kGeluTanh) {
    return T(0.5) * x * (T(1) + std::tanh(T(kSqrt2OverPi) * (x + T(0.044715) * x * x * x)));
  }
  if constexpr (kOp == UnaryOp::kSilu) return x / (T(1) + std::exp(-x));
  if constexpr (kOp == UnaryOp::kSin) return std::sin(x);
  if constexpr (kOp == UnaryOp::kCos) return std::cos(x);
  if constexpr (kOp == UnaryOp::kPow) return std::pow(x, p);
  if constexpr (kOp == UnaryOp::kAddScalar) return x + p;
  if constexpr (kOp == UnaryOp::kMulScalar) return x * p;
  if constexpr (kOp == UnaryOp::kClampMin) return pick(x < p, p, x);
  if constexpr (kOp == UnaryOp::kClampMax) return pick(x > p, p, x);
  if constexpr (kOp == UnaryOp::kSquare) return x * x;
  if constexpr (kOp == UnaryOp::kReciprocal) return T(1) / x;
}

// dy/dx for one element, given x and y = op(x).
template <UnaryOp kOp, typename T>
inline T unary_derivative(T x, T y, T p) {
  if constexpr (kOp == UnaryOp::kNeg) return T(-1);
  if constexpr (kOp == UnaryOp::kExp) return y;
  if constexpr (kOp == UnaryOp::kLog) return T(1) / x;
  if constexpr (kOp == UnaryOp::kSqrt) return T(0.5) / y;
  if constexpr (kOp == UnaryOp::kRsqrt) return T(-0.5) * y * y * y;
  if constexpr (kOp == UnaryOp::kAbs) return pick(x > T(0), T(1), pick(x < T(0), T(-1), T(0)));
  if constexpr (kOp == UnaryOp::kTanh) return T(1) - y * y;
  if constexpr (kOp == UnaryOp::kSigmoid) return y * (T(1) - y);
  if constexpr (kOp == UnaryOp::kRelu) return pick(x > T(0), T(1), T(0));
  if constexpr (kOp == UnaryOp::kElu) return pick(x > T(0), T(1), y + p);
  // From y alone (x > 0 ⇔ y = x + 1 > 1; x ≤ 0 ⇔ y = e^x ≤ 1, which both exps keep): the
  // backward then never reads x, which is usually a strided view of the q/k projection. NaN
  // fails the comparison and stays NaN.
  if constexpr (kOp == UnaryOp::kOnePlusElu) return pick(y > T(1), T(1), y);
  if constexpr (kOp == UnaryOp::kGeluErf) {
    return T(0.5) * (T(1) + std::erf(x * T(kInvSqrt2))) + x * T(kInvSqrt2Pi) * std::exp(-x * x / 2);
  }
  if constexpr (kOp == UnaryOp::kGeluTanh) {
    const T inner = T(kSqrt2OverPi) * (x + T(0.044715) * x * x * x);
    const T t = std::tanh(inner);
    const T dinner = T(kSqrt2OverPi) * (T(1) + T(3 * 0.044715) * x * x);
    return T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * dinner;
  }
  if constexpr (kOp == UnaryOp::kSilu) {
    const T s = T(1) / (T(1) + std::exp(-x));
    return s * (T(1) + x * (T(1) - s));
  }
  if constexpr (kOp == UnaryOp::kSin) return std::cos(x);
  if constexpr (kOp == UnaryOp::kCos) return -std::sin(x);
  if constexpr (kOp == UnaryOp::kPow) return p * std::pow(x, p - T(1));
  if constexpr (kOp == UnaryOp::kAddScalar) return T(1);
  if constexpr (kOp == UnaryOp::kMulScalar) return p;
  // Clamp passes the gradient where the input is inside the bound (ties go to the input).
  if constexpr (kOp == UnaryOp::kClampMin) return pick(x >= p, T(1), T(0));
  if constexpr (kOp == UnaryOp::kClampMax) return pick(x <= p, T(1), T(0));
  if constexpr (kOp == UnaryOp::kSquare) return T(2) * x;
  if constexpr (kOp == UnaryOp::kReciprocal) return -y * y;
}

// Cost weights keep cheap ops serial until the array is large enough to pay for a fork.
template <UnaryOp kOp>
constexpr int64_t unary_cost() {
  switch (kOp) {
    case UnaryOp::kNeg:
    case UnaryOp::kAbs:
    case UnaryOp::kRelu:
    case UnaryOp::kAddScalar:
    case UnaryOp::kMulScalar:
    case UnaryOp::kClampMin:
    case UnaryOp::kClampMax:
    case UnaryOp::kSquare:
      return 1;
    default:
      return 8;
  }
}

// f32 maps that need exp, expm1, erf or tanh run vecmath's array kernels (vectorised, built for
// AVX-512, AVX2 and plain x86-64 and picked at run time); libm's expf/erff/tanhf are scalar
// calls (GELU with erff cost ~12 ns per element). f64 stays on libm: it is the gradient-check
// precision. Backward maps whose derivative comes from y (exp, tanh, sigmoid, elu) need none.
template <UnaryOp kOp>
constexpr bool kHasVecmathForward =
    kOp == UnaryOp::kExp || kOp == UnaryOp::kTanh || kOp == UnaryOp::kSigmoid ||
    kOp == UnaryOp::kSilu || kOp == UnaryOp::kElu || kOp == UnaryOp::kOnePlusElu ||
    kOp == UnaryOp::kGeluErf || kOp == UnaryOp::kGeluTanh;
template <UnaryOp kOp>
constexpr bool kHasVecmathBackward =
    kOp == UnaryOp::kSilu || kOp == UnaryOp::kGeluErf || kOp == UnaryOp::kGeluTanh;

// x, y: [n]
template <UnaryOp kOp>
void vecmath_forward(const float* x, float* y, int64_t n, float p) {
  const vecmath::Kernels& k = vecmath::kernels();
  if constexpr (kOp == UnaryOp::kExp) k.exp(x, y, n);
  if constexpr (kOp == UnaryOp::kTanh) k.tanh(x, y, n);
  if constexpr (kOp == UnaryOp::kSigmoid) k.sigmoid(x, y, n);
  if constexpr (kOp == UnaryOp::kSilu) k.silu(x, y, n);
  if constexpr (kOp == UnaryOp::kElu) k.elu(x, y, n, p);
  if constexpr (kOp == UnaryOp::kOnePlusElu) k.one_plus_elu(x, y, n);
  if constexpr (kOp == UnaryOp::kGeluErf) k.gelu_erf(x, y, n);
  if constexpr (kOp == UnaryOp::kGeluTanh) k.gelu_tanh(x, y, n);
}

// x, g, gx: [n]
template <UnaryOp kOp>
void vecmath_backward(const float* x, const float* g, float* gx, int64_t n) {
  const vecmath::Kernels& k = vecmath::kernels();
  if constexpr (kOp == UnaryOp::kSilu) k.silu_backward(x, g, gx, n);
  if constexpr (kOp == UnaryOp::kGeluErf) k.gelu_erf_backward(x, g, gx, n);
  if constexpr (kOp == UnaryOp::kGeluTanh) k.gelu_tanh_backward(x, g, gx, n);
}

// y = op(x) over [n] on the calling thread. x, y: [n]
template <UnaryOp kOp, typename T>
void unary_span(const T* x, T* y, int64_t n, T p) {
  if constexpr (std::is_same_v<T, float> && kHasVecmathForward<kOp>) {
    vecmath_forward<kOp>(x, y, n, p);
  } else {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) y[i] = unary_value<kOp, T>(x[i], p);
  }
}

// gx = g · op'(x) over [n] on the calling thread (x is not read when the derivative comes
// from y alone). x, y, g, gx: [n]
template <UnaryOp kOp, typename T>
void unary_backward_span(const T* x, const T* y, const T* g, T* gx, int64_t n, T p) {
  if constexpr (std::is_same_v<T, float> && kHasVecmathBackward<kOp>) {
    vecmath_backward<kOp>(x, g, gx, n);
  } else {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) gx[i] = g[i] * unary_derivative<kOp, T>(x[i], y[i], p);
  }
}

template <UnaryOp kOp, typename T>
void unary_loop(const T* x, T* y, int64_t n, T p) {
  parallel_for(n, unary_cost<kOp>(), [&](int64_t begin, int64_t end) {
    unary_span<kOp, T>(x + begin, y + begin, end - begin, p);
  });
}

template <UnaryOp kOp, typename T>
void unary_backward_loop(const T* x, const T* y, const T* g, T* gx, int64_t n, T p) {
  parallel_for(n, unary_cost<kOp>(), [&](int64_t begin, int64_t end) {
    unary_backward_span<kOp, T>(x + begin, y + begin, g + begin, gx + begin, end - begin, p);
  });
}

// Turns the runtime op into a compile-time one so each loop is specialised and vectorised.
template <typename F>
void dispatch_unary(UnaryOp op, F&& f) {
#define ROTA_UNARY_CASE(name)                            \
  case UnaryOp::name:                                    \
    f(std::integral_constant<UnaryOp, UnaryOp::name>{}); \
    return;
  switch (op) {
    ROTA_UNARY_CASE(kNeg)
    ROTA_UNARY_CASE(kExp)
    ROTA_UNARY_CASE(kLog)
    ROTA_UNARY_CASE(kSqrt)
    ROTA_UNARY_CASE(kRsqrt)
    ROTA_UNARY_CASE(kAbs)
    ROTA_UNARY_CASE(kTanh)
    ROTA_UNARY_CASE(kSigmoid)
    ROTA_UNARY_CASE(kRelu)
    ROTA_UNARY_CASE(kElu)
    ROTA_UNARY_CASE(kGeluErf)
    ROTA_UNARY_CASE(kGeluTanh)
    ROTA_UNARY_CASE(kSilu)
    ROTA_UNARY_CASE(kSin)
    ROTA_UNARY_CASE(kCos)
    ROTA_UNARY_CASE(kPow)
    ROTA_UNARY_CASE(kAddScalar)
    ROTA_UNARY_CASE(kMulScalar)
    ROTA_UNARY_CASE(kClampMin)
    ROTA_UNARY_CASE(kClampMax)
    ROTA_UNARY_CASE(kSquare)
    ROTA_UNARY_CASE(kReciprocal)
    ROTA_UNARY_CASE(kOnePlusElu)
  }
#undef ROTA_UNARY_CASE
}

}  // namespace

namespace {

// Views whose rows (innermost dim) are unit-stride and long enough to vectorise are read in
// place, row by row, instead of being copied to a contiguous tensor first: the head views
// [B, H, N, D] of a [B, N, 3E] projection that linear attention's feature map reads.
bool reads_rows_in_place(const Tensor& x) {
  return !x.is_contiguous() && x.dim() >= 2 && x.strides().back() == 1 && x.size(-1) >= 16;
}

// Calls row(offset_a, offset_b) for every row of the innermost dim of two same-shape tensors,
// rows split across threads; cost is per row.
template <typename F>
void parallel_rows(const Tensor& a, const Tensor& b, int64_t cost, F&& row) {
  const int64_t inner = a.size(-1);
  const int64_t rows = inner == 0 ? 0 : a.numel() / inner;
  parallel_for(rows, cost, [&](int64_t r0, int64_t r1) {
    for_each_row_pair(a.shape(), a.strides(), b.strides(), r0, r1, row);
  });
}

}  // namespace

Tensor unary(UnaryOp op, const Tensor& x_in, double param) {
  const bool in_place_rows = reads_rows_in_place(x_in) && is_floating(x_in.dtype());
  const Tensor x = in_place_rows ? x_in : x_in.contiguous();
  Tensor y = Tensor::empty(x.shape(), x.dtype());
  dispatch_floating(x.dtype(), unary_op_name(op), [&](auto tag) {
    using T = decltype(tag);
    dispatch_unary(op, [&](auto op_constant) {
      constexpr UnaryOp kOp = decltype(op_constant)::value;
      if (!in_place_rows) {
        unary_loop<kOp, T>(x.data<T>(), y.data<T>(), x.numel(), static_cast<T>(param));
        return;
      }
      const T* xs = x.data<T>();
      T* ys = y.data<T>();
      const int64_t inner = x.size(-1);
      parallel_rows(x, y, inner * unary_cost<kOp>(), [&](int64_t ox, int64_t oy) {
        unary_span<kOp, T>(xs + ox, ys + oy, inner, static_cast<T>(param));
      });
    });
  });
  return y;
}

bool derivative_needs_only_output(UnaryOp op) {
  switch (op) {
    case UnaryOp::kNeg:
    case UnaryOp::kExp:
    case UnaryOp::kSqrt:
    case UnaryOp::kRsqrt:
    case UnaryOp::kTanh:
    case UnaryOp::kSigmoid:
    case UnaryOp::kOnePlusElu:
    case UnaryOp::kAddScalar:
    case UnaryOp::kMulScalar:
    case UnaryOp::kReciprocal:
      return true;
    default:
      return false;
  }
}

Tensor unary_backward(UnaryOp op, const Tensor& x_in, const Tensor& y_in, const Tensor& g_in,
                      double param) {
  ROTA_CHECK(x_in.shape() == g_in.shape() && y_in.shape() == g_in.shape(),
             "{}_backward: x {}, y {}, grad {} differ", unary_op_name(op), shape_str(x_in.shape()),
             shape_str(y_in.shape()), shape_str(g_in.shape()));
  const Tensor y = y_in.contiguous();
  const Tensor g = g_in.contiguous();
  if (derivative_needs_only_output(op) && is_floating(y.dtype())) {
    // x is never read. When it is a strided view, grad_x takes its layout (dense in x's
    // stride order, so undoing the view's permute is free), written row by row.
    const bool in_layout_of_x = reads_rows_in_place(x_in);
    Tensor gx = in_layout_of_x ? empty_in_layout_of(x_in) : Tensor::empty(y.shape(), y.dtype());
    dispatch_floating(y.dtype(), unary_op_name(op), [&](auto tag) {
      using T = decltype(tag);
      dispatch_unary(op, [&](auto op_constant) {
        constexpr UnaryOp kOp = decltype(op_constant)::value;
        const T* ys = y.data<T>();
        const T* gs = g.data<T>();
        T* gxs = gx.data<T>();
        const T p = static_cast<T>(param);
        if (!in_layout_of_x) {
          unary_backward_loop<kOp, T>(ys, ys, gs, gxs, y.numel(), p);
          return;
        }
        const int64_t inner = y.size(-1);
        // y and g are contiguous with the same shape: one offset serves both.
        parallel_rows(gx, y, inner * unary_cost<kOp>(), [&](int64_t o_gx, int64_t o_y) {
          unary_backward_span<kOp, T>(ys + o_y, ys + o_y, gs + o_y, gxs + o_gx, inner, p);
        });
      });
    });
    return gx;
  }
  const Tensor x = x_in.contiguous();
  Tensor gx = Tensor::empty(x.shape(), x.dtype());
  dispatch_floating(x.dtype(), unary_op_name(op), [&](auto tag) {
    using T = decltype(tag);
    dispatch_unary(op, [&](auto op_constant) {
      unary_backward_loop<decltype(op_constant)::value, T>(
          x.data<T>(), y.data<T>(), g.data<T>(), gx.data<T>(), x.numel(), static_cast<T>(param));
    });
  });
  return gx;
}

void unary_array(UnaryOp op, const float* x, float* y, int64_t n, float param) {
  dispatch_unary(op, [&](auto op_constant) {
    unary_span<decltype(op_constant)::value, float>(x, y, n, param);  // what unary_loop runs
  });
}

bool derivative_needs_only_input(UnaryOp op) {
  return op == UnaryOp::kRelu || op == UnaryOp::kGeluErf || op == UnaryOp::kGeluTanh ||
         op == UnaryOp::kSilu;
}

void unary_backward_array(UnaryOp op, const float* x, const float* grad_y, float* grad_x,
                          int64_t n) {
  ROTA_CHECK(derivative_needs_only_input(op),
             "unary_backward_array: {}'s derivative needs the output; use unary_backward",
             unary_op_name(op));
  dispatch_unary(op, [&](auto op_constant) {
    // What unary_backward_loop runs (y is not read by these derivatives).
    unary_backward_span<decltype(op_constant)::value, float>(x, x, grad_y, grad_x, n, 0.0f);
  });
}

namespace {

template <BinaryOp kOp, typename T>
inline T binary_value(T a, T b) {
  if constexpr (kOp == BinaryOp::kAdd) return a + b;
  if constexpr (kOp == BinaryOp::kSub) return a - b;
  if constexpr (kOp == BinaryOp::kMul) return a * b;
  if constexpr (kOp == BinaryOp::kDiv) return a / b;
  if constexpr (kOp == BinaryOp::kMaximum) return a > b ? a : b;
  if constexpr (kOp == BinaryOp::kMinimum) return a < b ? a : b;
  if constexpr (kOp == BinaryOp::kPow) return std::pow(a, b);
  if constexpr (kOp == BinaryOp::kEq) return a == b ? T(1) : T(0);
  if constexpr (kOp == BinaryOp::kNe) return a != b ? T(1) : T(0);
  if constexpr (kOp == BinaryOp::kLt) return a < b ? T(1) : T(0);
  if constexpr (kOp == BinaryOp::kLe) return a <= b ? T(1) : T(0);
  if constexpr (kOp == BinaryOp::kGt) return a > b ? T(1) : T(0);
  if constexpr (kOp == BinaryOp::kGe) return a >= b ? T(1) : T(0);
}

template <typename F>
void dispatch_binary(BinaryOp op, F&& f) {
#define ROTA_BINARY_CASE(name)                             \
  case BinaryOp::name:                                     \
    f(std::integral_constant<BinaryOp, BinaryOp::name>{}); \
    return;
  switch (op) {
    ROTA_BINARY_CASE(kAdd)
    ROTA_BINARY_CASE(kSub)
    ROTA_BINARY_CASE(kMul)
    ROTA_BINARY_CASE(kDiv)
    ROTA_BINARY_CASE(kMaximum)
    ROTA_BINARY_CASE(kMinimum)
    ROTA_BINARY_CASE(kPow)
    ROTA_BINARY_CASE(kEq)
    ROTA_BINARY_CASE(kNe)
    ROTA_BINARY_CASE(kLt)
    ROTA_BINARY_CASE(kLe)
    ROTA_BINARY_CASE(kGt)
    ROTA_BINARY_CASE(kGe)
  }
#undef ROTA_BINARY_CASE
}

// out[i] = op(a[ia], b[ib]) over an output of `shape`; a and b are given with strides already
// expanded to `shape` (0 for broadcast dims). Parallel over rows of the innermost dim.
template <BinaryOp kOp, typename T>
void binary_strided(const Shape& shape, const T* a, const Strides& sa, const T* b,
                    const Strides& sb, T* out) {
  const int64_t nd = static_cast<int64_t>(shape.size());
  const int64_t inner = nd ? shape[nd - 1] : 1;
  const int64_t rows = inner ? shape_numel(shape) / inner : 0;
  const int64_t ia = nd ? sa[nd - 1] : 0;
  const int64_t ib = nd ? sb[nd - 1] : 0;
  parallel_for(rows, inner, [&](int64_t row_begin, int64_t row_end) {
    for (int64_t row = row_begin; row < row_end; ++row) {
      int64_t oa = 0;
      int64_t ob = 0;
      int64_t rest = row;
      for (int64_t d = nd - 2; d >= 0; --d) {
        const int64_t idx = rest % shape[d];
        rest /= shape[d];
        oa += idx * sa[d];
        ob += idx * sb[d];
      }
      T* o = out + row * inner;
      const T* pa = a + oa;
      const T* pb = b + ob;
      if (ia == 1 && ib == 1) {
#pragma omp simd
        for (int64_t i = 0; i < inner; ++i) o[i] = binary_value<kOp, T>(pa[i], pb[i]);
      } else if (ia == 1 && ib == 0) {
        const T vb = *pb;
#pragma omp simd
        for (int64_t i = 0; i < inner; ++i) o[i] = binary_value<kOp, T>(pa[i], vb);
      } else if (ia == 0 && ib == 1) {
        const T va = *pa;
#pragma omp simd
        for (int64_t i = 0; i < inner; ++i) o[i] = binary_value<kOp, T>(va, pb[i]);
      } else {
        for (int64_t i = 0; i < inner; ++i) o[i] = binary_value<kOp, T>(pa[i * ia], pb[i * ib]);
      }
    }
  });
}

}  // namespace

Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b) {
  const char* name = binary_op_name(op);
  ROTA_CHECK(a.dtype() == b.dtype(), "{}: dtypes differ ({} {} vs {} {})", name,
             dtype_name(a.dtype()), shape_str(a.shape()), dtype_name(b.dtype()),
             shape_str(b.shape()));
  const Shape shape = broadcast_shapes(a.shape(), b.shape(), name);
  Tensor out = Tensor::empty(shape, a.dtype());
  if (out.numel() == 0) return out;
  const Tensor ae = a.expand(shape);
  const Tensor be = b.expand(shape);
  dispatch_floating(a.dtype(), name, [&](auto tag) {
    using T = decltype(tag);
    dispatch_binary(op, [&](auto op_constant) {
      constexpr BinaryOp kOp = decltype(op_constant)::value;
      if (ae.is_contiguous() && be.is_contiguous()) {
        // Same-shape fast path: one flat loop.
        const T* pa = ae.data<T>();
        const T* pb = be.data<T>();
        T* po = out.data<T>();
        parallel_for(out.numel(), 1, [&](int64_t begin, int64_t end) {
#pragma omp simd
          for (int64_t i = begin; i < end; ++i) po[i] = binary_value<kOp, T>(pa[i], pb[i]);
        });
      } else {
        binary_strided<kOp, T>(shape, ae.data<T>(), ae.strides(), be.data<T>(), be.strides(),
                               out.data<T>());
      }
    });
  });
  return out;
}

void add_inplace(Tensor& a, const Tensor& b) {
  ROTA_CHECK(a.is_contiguous(), "add_inplace: destination {} is not contiguous",
             shape_str(a.shape()));
  ROTA_CHECK(a.dtype() == b.dtype(), "add_inplace: dtypes differ ({} vs {})", dtype_name(a.dtype()),
             dtype_name(b.dtype()));
  ROTA_CHECK(broadcast_shapes(a.shape(), b.shape(), "add_inplace") == a.shape(),
             "add_inplace: {} does not broadcast to {}", shape_str(b.shape()),
             shape_str(a.shape()));
  if (a.numel() == 0) return;
  const Tensor be = b.expand(a.shape());
  dispatch_floating(a.dtype(), "add_inplace", [&](auto tag) {
    using T = decltype(tag);
    binary_strided<BinaryOp::kAdd, T>(a.shape(), a.data<T>(), a.strides(), be.data<T>(),
                                      be.strides(), a.data<T>());
  });
}

void axpy_inplace(Tensor& a, double alpha, const Tensor& b_in) {
  ROTA_CHECK(a.is_contiguous() && a.shape() == b_in.shape() && a.dtype() == b_in.dtype(),
             "axpy_inplace: {} {} += alpha * {} {}", dtype_name(a.dtype()), shape_str(a.shape()),
             dtype_name(b_in.dtype()), shape_str(b_in.shape()));
  const Tensor b = b_in.contiguous();
  dispatch_floating(a.dtype(), "axpy_inplace", [&](auto tag) {
    using T = decltype(tag);
    T* pa = a.data<T>();
    const T* pb = b.data<T>();
    const T s = static_cast<T>(alpha);
    parallel_for(a.numel(), 1, [&](int64_t begin, int64_t end) {
#pragma omp simd
      for (int64_t i = begin; i < end; ++i) pa[i] += s * pb[i];
    });
  });
}

Tensor sum_to_shape(const Tensor& grad, const Shape& shape) {
  if (grad.shape() == shape) return grad;
  const int64_t lead = grad.dim() - static_cast<int64_t>(shape.size());
  ROTA_CHECK(lead >= 0, "sum_to_shape: {} cannot be reduced to {}", shape_str(grad.shape()),
             shape_str(shape));
  std::vector<int64_t> axes;
  for (int64_t i = 0; i < grad.dim(); ++i) {
    if (i < lead) {
      axes.push_back(i);
    } else if (shape[i - lead] == 1 && grad.size(i) != 1) {
      axes.push_back(i);
    } else {
      ROTA_CHECK(shape[i - lead] == grad.size(i), "sum_to_shape: {} cannot be reduced to {}",
                 shape_str(grad.shape()), shape_str(shape));
    }
  }
  if (axes.empty()) return grad.reshape(shape);
  return reduce_sum(grad, axes, /*keepdim=*/true).reshape(shape);
}

}  // namespace rota::backend
