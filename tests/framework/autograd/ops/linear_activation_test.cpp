// linear_activation (fc1 + activation as one op) against the composed linear → activation ops:
// bit for bit in f32 and under bf16 (native and portable paths), tightly in f64.
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "framework/autograd/ops/elementwise.h"
#include "framework/autograd/ops/matmul.h"
#include "framework/base/error.h"
#include "framework/tensor/random.h"
#include "tests/support/fused_vs_composed.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

using backend::UnaryOp;
using rota::testing::expect_same_results;
using rota::testing::for_each_bf16_matmul_path;
using rota::testing::kFusedActivations;

Variable composed(const Variable& x, const Variable& w, const Variable& b, UnaryOp act) {
  const Variable h = linear(x, w, b);
  switch (act) {
    case UnaryOp::kRelu:
      return relu(h);
    case UnaryOp::kGeluErf:
      return gelu(h, false);
    case UnaryOp::kGeluTanh:
      return gelu(h, true);
    default:
      return silu(h);
  }
}

// y and the gradients of x, W, b after backward with a fixed random seed gradient.
std::vector<Tensor> run(bool fused, UnaryOp act, const std::vector<Tensor>& inputs,
                        const Tensor& seed) {
  Variable x(inputs[0].clone(), true), w(inputs[1].clone(), true), b(inputs[2].clone(), true);
  const Variable y = fused ? linear_activation(x, w, b, act) : composed(x, w, b, act);
  y.backward(seed);
  return {y.data(), x.grad(), w.grad(), b.grad()};
}

void expect_identical(UnaryOp act, DType dtype, const std::string& what) {
  Generator gen(17);
  // 150 rows: two full row chunks of 64 and a partial one; 70 outputs: tile edges.
  const std::vector<Tensor> inputs = {randn({3, 50, 24}, gen, 0, 1, dtype),
                                      randn({70, 24}, gen, 0, 0.3, dtype),
                                      randn({70}, gen, 0, 0.3, dtype)};
  const Tensor seed = randn({3, 50, 70}, gen, 0, 1, dtype);
  expect_same_results(run(true, act, inputs, seed), run(false, act, inputs, seed),
                      {"y", "dx", "dW", "db"}, dtype, what);
}

TEST(LinearActivation, F32AndF64MatchTheComposedOps) {
  for (UnaryOp act : kFusedActivations) {
    expect_identical(act, DType::kF32, std::string("f32 ") + backend::unary_op_name(act));
    expect_identical(act, DType::kF64, std::string("f64 ") + backend::unary_op_name(act));
  }
}

TEST(LinearActivation, Bf16MatchesTheComposedOpsOnBothPaths) {
  for_each_bf16_matmul_path([](const std::string& path) {
    for (UnaryOp act : kFusedActivations) {
      expect_identical(act, DType::kF32, path + backend::unary_op_name(act));
    }
  });
}

TEST(LinearActivation, OnlyRequestedGradientsAndNoGraphWithoutGrad) {
  Generator gen(18);
  const Variable x(randn({4, 6}, gen), false);
  Variable w(randn({5, 6}, gen), true);
  const Variable b(randn({5}, gen), false);
  const Variable y = linear_activation(x, w, b, UnaryOp::kGeluErf);
  y.backward(randn({4, 5}, gen));
  EXPECT_TRUE(w.grad().defined());
  EXPECT_FALSE(x.grad().defined());
  EXPECT_FALSE(b.grad().defined());
  const Variable frozen = linear_activation(x, Variable(w.data()), b, UnaryOp::kRelu);
  EXPECT_FALSE(frozen.requires_grad());
}

TEST(LinearActivation, RejectsUnsupportedActivationsAndMissingBias) {
  Generator gen(19);
  const Variable x(randn({2, 3}, gen), true);
  const Variable w(randn({4, 3}, gen), true);
  const Variable b(randn({4}, gen), true);
  EXPECT_THROW(linear_activation(x, w, b, UnaryOp::kTanh), Error);
  EXPECT_THROW(linear_activation(x, w, Variable(), UnaryOp::kRelu), Error);
  EXPECT_THROW(linear_activation(Variable(randn({2, 5}, gen)), w, b, UnaryOp::kRelu), Error);
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
