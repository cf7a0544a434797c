// activation_backward_with_column_sums and activation_to_bf16: bit for bit the separate
// unary_backward / unary, reduce_sum and bf16 rounding (to bf16 or to bf16 values in f32), over
// row chunk edges, one column, strided inputs; bad inputs refused.
#include "framework/backend/fused/fused_activation.h"

#include <gtest/gtest.h>

#include "framework/backend/primitives/convert.h"
#include "framework/backend/primitives/reduce.h"
#include "framework/base/error.h"
#include "framework/tensor/random.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

using backend::Bf16Rounding;
using backend::UnaryOp;

// The separate rounding a fused kernel's rounding stands for (bf16 values in f32: rounded to a
// bf16 tensor and widened back, independently of the one-pass kernel).
Tensor round_separately(const Tensor& x, Bf16Rounding rounding) {
  switch (rounding) {
    case Bf16Rounding::kToBf16:
      return backend::to_bf16(x);
    case Bf16Rounding::kToBf16Values:
      return backend::to_bf16(x).to(DType::kF32);
    case Bf16Rounding::kNone:
      break;
  }
  return x;
}

constexpr Bf16Rounding kRoundings[] = {Bf16Rounding::kNone, Bf16Rounding::kToBf16,
                                       Bf16Rounding::kToBf16Values};

TEST(ActivationBackwardWithColumnSums, SameBitsAsTheSeparatePasses) {
  Generator gen(8);
  for (UnaryOp act : {UnaryOp::kRelu, UnaryOp::kGeluErf, UnaryOp::kGeluTanh, UnaryOp::kSilu}) {
    for (int64_t rows : {1, 64, 65, 200}) {
      for (int64_t cols : {1, 3, 130}) {
        const Tensor h = randn({rows, cols}, gen, 0, 2);
        const Tensor dy = randn({rows, cols}, gen, 0, 5);
        const Tensor dh = backend::unary_backward(act, h, h, dy);
        const Tensor sums = backend::reduce_sum(dh, {0}, false);
        for (Bf16Rounding rounding : kRoundings) {
          const auto fused = backend::activation_backward_with_column_sums(act, h, dy, rounding);
          const Tensor want = round_separately(dh, rounding);
          const int r = static_cast<int>(rounding);
          ASSERT_EQ(fused.grad_input.dtype(), want.dtype());
          EXPECT_EQ(fused.grad_input.to_double_vector(), want.to_double_vector())
              << backend::unary_op_name(act) << " " << rows << "x" << cols << " rounding " << r;
          EXPECT_EQ(fused.column_sums.to_double_vector(), sums.to_double_vector())
              << backend::unary_op_name(act) << " " << rows << "x" << cols << " rounding " << r;
        }
      }
    }
  }
}

TEST(ActivationToBf16, SameBitsAsActivationThenRounding) {
  Generator gen(11);
  for (UnaryOp act : {UnaryOp::kRelu, UnaryOp::kGeluErf, UnaryOp::kGeluTanh, UnaryOp::kSilu}) {
    // 3·4100 elements: several 4096-element blocks and a partial one; and a strided view.
    const Tensor h = randn({3, 4100}, gen, 0, 3);
    for (const Tensor& x : {h, h.transpose(0, 1)}) {
      for (Bf16Rounding rounding : {Bf16Rounding::kToBf16, Bf16Rounding::kToBf16Values}) {
        const Tensor fused = backend::activation_to_bf16(act, x, rounding);
        const Tensor want = round_separately(backend::unary(act, x), rounding);
        ASSERT_EQ(fused.dtype(), want.dtype());
        ASSERT_EQ(fused.shape(), x.shape());
        EXPECT_EQ(fused.to_double_vector(), want.to_double_vector())
            << backend::unary_op_name(act) << " rounding " << static_cast<int>(rounding);
      }
    }
  }
  EXPECT_THROW(backend::activation_to_bf16(UnaryOp::kRelu, randn({2}, gen).to(DType::kF64)), Error);
}

TEST(ActivationBackwardWithColumnSums, ReadsStridedInputs) {
  Generator gen(9);
  const Tensor h = randn({70, 90}, gen).transpose(0, 1);  // [90, 70], not contiguous
  const Tensor dy = randn({90, 70}, gen);
  const auto fused =
      backend::activation_backward_with_column_sums(UnaryOp::kGeluErf, h, dy, Bf16Rounding::kNone);
  const Tensor dh = backend::unary_backward(UnaryOp::kGeluErf, h, h, dy);
  EXPECT_EQ(fused.grad_input.to_double_vector(), dh.to_double_vector());
  EXPECT_EQ(fused.column_sums.to_double_vector(),
            backend::reduce_sum(dh, {0}, false).to_double_vector());
}

TEST(ActivationBackwardWithColumnSums, RefusesOtherOpsDtypesAndShapes) {
  Generator gen(10);
  const Tensor h = randn({4, 3}, gen);
  EXPECT_THROW(
      backend::activation_backward_with_column_sums(UnaryOp::kExp, h, h, Bf16Rounding::kNone),
      Error);
  EXPECT_THROW(backend::activation_backward_with_column_sums(UnaryOp::kRelu, h, randn({3, 4}, gen),
                                                             Bf16Rounding::kNone),
               Error);
  EXPECT_THROW(backend::activation_backward_with_column_sums(
                   UnaryOp::kRelu, h.to(DType::kF64), h.to(DType::kF64), Bf16Rounding::kNone),
               Error);
  EXPECT_THROW(backend::unary_backward_array(UnaryOp::kExp, nullptr, nullptr, nullptr, 0), Error);
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
