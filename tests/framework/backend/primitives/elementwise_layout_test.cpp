// Unary maps over strided views: rows read in place give the contiguous copy's bits, gradients
// of output-only derivatives take the view's layout, and 1+elu's derivative from its output
// equals the input form.
#include <bit>
#include <cmath>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "framework/backend/primitives/elementwise.h"
#include "framework/tensor/random.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

using backend::UnaryOp;

// The q head view linear attention reads: [B, N, 3E] projection → first E columns → [B, H, N, D].
Tensor head_view(const Tensor& projection, int64_t heads) {
  const int64_t b = projection.size(0), n = projection.size(1), e = projection.size(2) / 3;
  return projection.narrow(2, 0, e).reshape({b, n, heads, e / heads}).permute({0, 2, 1, 3});
}

std::vector<uint64_t> bits_of(const Tensor& t) {
  const Tensor c = t.contiguous();
  std::vector<uint64_t> out;
  for (int64_t i = 0; i < c.numel(); ++i) {
    out.push_back(c.dtype() == DType::kF32 ? std::bit_cast<uint32_t>(c.data<float>()[i])
                                           : std::bit_cast<uint64_t>(c.data<double>()[i]));
  }
  return out;
}

const UnaryOp kOps[] = {UnaryOp::kOnePlusElu, UnaryOp::kExp,       UnaryOp::kGeluErf,
                        UnaryOp::kTanh,       UnaryOp::kSquare,    UnaryOp::kAddScalar,
                        UnaryOp::kSigmoid,    UnaryOp::kReciprocal};

TEST(UnaryStridedView, RowsReadInPlaceGiveTheContiguousCopysBits) {
  Generator gen(21);
  for (DType dtype : {DType::kF32, DType::kF64}) {
    for (int64_t d : {16, 24, 64}) {  // 24: a row that ends in a vector tail
      const Tensor projection = randn({2, 37, 3 * 4 * d}, gen, 0, 2).to(dtype);
      const Tensor x = head_view(projection, 4);
      ASSERT_FALSE(x.is_contiguous());
      for (UnaryOp op : kOps) {
        const Tensor y = backend::unary(op, x, 0.25);
        ASSERT_TRUE(y.is_contiguous());
        ASSERT_EQ(y.shape(), x.shape());
        EXPECT_EQ(bits_of(y), bits_of(backend::unary(op, x.contiguous(), 0.25)))
            << backend::unary_op_name(op) << " " << dtype_name(dtype) << " D=" << d;
      }
    }
  }
}

TEST(UnaryBackwardFromOutput, GradientOfAStridedViewTakesItsLayout) {
  Generator gen(22);
  for (DType dtype : {DType::kF32, DType::kF64}) {
    const Tensor projection = randn({2, 33, 3 * 4 * 16}, gen, 0, 2).to(dtype);
    const Tensor x = head_view(projection, 4);  // [2, 4, 33, 16]
    const Tensor g = randn(x.shape(), gen).to(dtype);
    for (UnaryOp op : kOps) {
      const Tensor y = backend::unary(op, x, 0.25);
      const Tensor gx = backend::unary_backward(op, x, y, g, 0.25);
      const Tensor want = backend::unary_backward(op, x.contiguous(), y, g, 0.25);
      EXPECT_EQ(bits_of(gx), bits_of(want))
          << backend::unary_op_name(op) << " " << dtype_name(dtype);
      ASSERT_EQ(gx.shape(), x.shape());
      if (backend::derivative_needs_only_output(op)) {
        // Dense in x's order [B, N, H, D]: undoing the permute gives a contiguous tensor.
        EXPECT_TRUE(gx.permute({0, 2, 1, 3}).is_contiguous()) << backend::unary_op_name(op);
      } else {
        EXPECT_TRUE(gx.is_contiguous()) << backend::unary_op_name(op);
      }
    }
  }
}

// Views that are not permutations of dense storage: an expanded (stride-0) dim and a
// transposed last dim. Same bits as the contiguous copy; gradients keep unit-stride rows.
TEST(UnaryBackwardFromOutput, ExpandedAndTransposedViewsGiveTheContiguousCopysBits) {
  Generator gen(23);
  const Tensor row = randn({1, 32}, gen);
  const Tensor square = randn({24, 24}, gen);
  for (const Tensor& x : {row.expand({5, 32}), square.transpose(0, 1)}) {
    const Tensor g = randn(x.shape(), gen);
    for (UnaryOp op : kOps) {
      const Tensor y = backend::unary(op, x, 0.25);
      EXPECT_EQ(bits_of(y), bits_of(backend::unary(op, x.contiguous(), 0.25)))
          << backend::unary_op_name(op);
      const Tensor gx = backend::unary_backward(op, x, y, g, 0.25);
      EXPECT_EQ(bits_of(gx), bits_of(backend::unary_backward(op, x.contiguous(), y, g, 0.25)))
          << backend::unary_op_name(op);
      EXPECT_EQ(gx.strides().back(), 1) << backend::unary_op_name(op);
    }
  }
}

// The derivative of 1+elu is now read from y = 1+elu(x) alone: min(y, 1). It must equal the
// defining form (x > 0 ? 1 : y) for every x, which holds only if e^x ≤ 1 for x ≤ 0 and
// x + 1 ≥ 1 for x > 0 in the forward's own arithmetic (f32 vector exp, f64 libm).
TEST(UnaryBackwardFromOutput, OnePlusEluDerivativeFromTheOutputEqualsTheInputForm) {
  std::vector<double> xs = {0.0,
                            -0.0,
                            std::numeric_limits<double>::infinity(),
                            -std::numeric_limits<double>::infinity(),
                            std::numeric_limits<double>::quiet_NaN(),
                            1e-40,
                            -1e-40,
                            1e-300,
                            -1e-300};
  for (int i = -200000; i <= 200000; ++i) xs.push_back(i * 1e-8);    // around 0, both signs
  for (int i = -100000; i <= 100000; ++i) xs.push_back(i * 1.1e-3);  // -110 .. 110
  for (int e = -149; e <= 10; ++e) {
    xs.push_back(std::ldexp(1.0, e));
    xs.push_back(-std::ldexp(1.0, e));
  }
  const int64_t n = static_cast<int64_t>(xs.size());
  for (DType dtype : {DType::kF32, DType::kF64}) {
    const Tensor x = tensor_from(xs, {n}, dtype);
    const Tensor y = backend::unary(UnaryOp::kOnePlusElu, x);
    const Tensor ones = tensor_from(std::vector<double>(n, 1.0), {n}, dtype);
    const Tensor dx = backend::unary_backward(UnaryOp::kOnePlusElu, x, y, ones);
    const std::vector<double> xv = x.to_double_vector(), yv = y.to_double_vector(),
                              dv = dx.to_double_vector();
    for (int64_t i = 0; i < n; ++i) {
      const double want = xv[i] > 0 ? 1.0 : yv[i];
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(dv[i])) << "x = " << xv[i];
      } else {
        ASSERT_EQ(dv[i], want) << dtype_name(dtype) << " x = " << xv[i] << " y = " << yv[i];
      }
    }
  }
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
