// gated_activation (SwiGLU / GeGLU): forward and backward against a plain per-element reference
// in double, and the f32 fused pass against the composed elementwise ops; bad inputs refused.
#include "framework/backend/fused/gated_activation.h"

#include <cmath>

#include <gtest/gtest.h>

#include "framework/backend/primitives/convert.h"
#include "framework/backend/primitives/indexing.h"
#include "framework/base/error.h"
#include "framework/tensor/random.h"
#include "tests/support/expect_error.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

using backend::UnaryOp;

double act_ref(UnaryOp act, double x) {
  if (act == UnaryOp::kSilu) return x / (1.0 + std::exp(-x));
  return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));  // kGeluErf
}

double act_grad_ref(UnaryOp act, double x) {
  if (act == UnaryOp::kSilu) {
    const double s = 1.0 / (1.0 + std::exp(-x));
    return s * (1.0 + x * (1.0 - s));
  }
  const double pdf = std::exp(-0.5 * x * x) / std::sqrt(2.0 * M_PI);
  return 0.5 * (1.0 + std::erf(x / std::sqrt(2.0))) + x * pdf;
}

TEST(GatedActivation, ForwardAndBackwardMatchAPlainReference) {
  Generator gen(5);
  for (UnaryOp act : {UnaryOp::kSilu, UnaryOp::kGeluErf}) {
    for (DType dtype : {DType::kF32, DType::kF64}) {
      const int64_t rows = 7, hidden = 37;
      const Tensor gu = randn({rows, 2 * hidden}, gen, 0, 2, dtype);
      const Tensor dy = randn({rows, hidden}, gen, 0, 1, dtype);
      const std::vector<double> g = gu.to_double_vector(), d = dy.to_double_vector();
      const std::vector<double> y = backend::gated_activation(act, gu).to_double_vector();
      const std::vector<double> dgu =
          backend::gated_activation_backward(act, gu, dy).to_double_vector();
      ASSERT_EQ(y.size(), static_cast<size_t>(rows * hidden));
      ASSERT_EQ(dgu.size(), static_cast<size_t>(rows * 2 * hidden));
      // f32: a few ulp of the activation; f64: the composed ops, to rounding.
      const double tol = dtype == DType::kF32 ? 2e-6 : 1e-13;
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t j = 0; j < hidden; ++j) {
          const double gate = g[r * 2 * hidden + j], up = g[r * 2 * hidden + hidden + j];
          const double grad = d[r * hidden + j];
          const double want_y = act_ref(act, gate) * up;
          const double want_dgate = grad * up * act_grad_ref(act, gate);
          const double want_dup = grad * act_ref(act, gate);
          EXPECT_NEAR(y[r * hidden + j], want_y, tol * (1.0 + std::abs(want_y)));
          EXPECT_NEAR(dgu[r * 2 * hidden + j], want_dgate, tol * (1.0 + std::abs(want_dgate)));
          EXPECT_NEAR(dgu[r * 2 * hidden + hidden + j], want_dup, tol * (1.0 + std::abs(want_dup)));
        }
      }
    }
  }
}

TEST(GatedActivation, FusedF32PassIsBitForBitTheComposedOps) {
  Generator gen(9);
  for (UnaryOp act : {UnaryOp::kSilu, UnaryOp::kGeluErf}) {
    for (int64_t rows : {1, 3, 130}) {
      const int64_t hidden = 45;
      const Tensor full = randn({2 * hidden, rows}, gen, 0, 3);
      const Tensor gu = full.transpose(0, 1);  // strided: copied by the kernel
      const Tensor dy = randn({rows, hidden}, gen, 0, 1);
      const Tensor gate = gu.narrow(1, 0, hidden), up = gu.narrow(1, hidden, hidden);
      const Tensor y = backend::mul(backend::unary(act, gate), up);
      const Tensor dgate = backend::unary_backward(act, gate, gate, backend::mul(dy, up));
      const Tensor dup = backend::mul(dy, backend::unary(act, gate));
      EXPECT_EQ(backend::gated_activation(act, gu).to_double_vector(), y.to_double_vector())
          << backend::unary_op_name(act) << " rows " << rows;
      EXPECT_EQ(backend::gated_activation_backward(act, gu, dy).to_double_vector(),
                backend::concat({dgate, dup}, 1).to_double_vector())
          << backend::unary_op_name(act) << " rows " << rows;
    }
  }
}

TEST(GatedActivation, ToBf16IsBitForBitTheRoundedF32Pass) {
  Generator gen(10);
  for (UnaryOp act : {UnaryOp::kSilu, UnaryOp::kGeluErf}) {
    const Tensor gu = randn({33, 2 * 70}, gen, 0, 3);
    const Tensor fused = backend::gated_activation_to_bf16(act, gu);
    ASSERT_EQ(fused.dtype(), DType::kBF16);
    EXPECT_EQ(fused.to_double_vector(),
              backend::to_bf16(backend::gated_activation(act, gu)).to_double_vector())
        << backend::unary_op_name(act);
    // The portable path's form: the same values, kept in f32.
    const Tensor values =
        backend::gated_activation_to_bf16(act, gu, backend::Bf16Rounding::kToBf16Values);
    ASSERT_EQ(values.dtype(), DType::kF32);
    EXPECT_EQ(values.to_double_vector(), fused.to(DType::kF32).to_double_vector())
        << backend::unary_op_name(act);
  }
}

TEST(GatedActivation, RefusesBadInputs) {
  Generator gen(1);
  testing::expect_error(
      [&] {
        backend::gated_activation(UnaryOp::kSilu, randn({2, 5}, gen));
      },
      "[R, 2H]");
  testing::expect_error(
      [&] {
        backend::gated_activation(UnaryOp::kExp, randn({2, 4}, gen));
      },
      "not supported");
  testing::expect_error(
      [&] {
        backend::gated_activation_backward(UnaryOp::kSilu, randn({2, 4}, gen), randn({2, 3}, gen));
      },
      "dy");
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
