// gated_feed_forward (SwiGLU / GeGLU products and gated activation as one op) against the ops one
// by one (linear over [W_gate; W_up], gated_activation, linear): bit for bit in f32 and under bf16
// (native and portable paths), tightly in f64, with and without biases; partial gradients.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "framework/autograd/ops/feed_forward.h"
#include "framework/autograd/ops/matmul.h"
#include "framework/autograd/ops/shape.h"
#include "framework/autograd/precision.h"
#include "framework/base/error.h"
#include "framework/tensor/random.h"
#include "tests/support/expect_error.h"
#include "tests/support/fused_vs_composed.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

using backend::UnaryOp;
using testing::expect_error;
using testing::expect_same_results;
using testing::for_each_bf16_matmul_path;

// Inputs: x, W_gate, W_up, W_down[, b_gate, b_up, b_down]. Returns y and every input's gradient
// (undefined where not requested).
std::vector<Tensor> run(bool fused, UnaryOp act, const std::vector<Tensor>& inputs,
                        const std::vector<bool>& needs_grad, const Tensor& seed) {
  std::vector<Variable> v;
  for (size_t i = 0; i < inputs.size(); ++i) v.emplace_back(inputs[i].clone(), needs_grad[i]);
  const bool bias = v.size() == 7;
  const Variable bg = bias ? v[4] : Variable(), bu = bias ? v[5] : Variable();
  const Variable bd = bias ? v[6] : Variable();
  Variable y;
  if (fused) {
    y = gated_feed_forward(v[0], v[1], bg, v[2], bu, v[3], bd, act);
  } else {
    const Variable gu =
        linear(v[0], concat({v[1], v[2]}, 0), bias ? concat({bg, bu}, 0) : Variable());
    y = linear(gated_activation(gu, act), v[3], bd);
  }
  y.backward(seed);
  std::vector<Tensor> out = {y.data()};
  for (const Variable& x : v) out.push_back(x.grad());
  return out;
}

void expect_identical(UnaryOp act, DType dtype, bool bias, const std::vector<bool>& needs_grad,
                      const std::string& what) {
  Generator gen(41);
  // 130 rows, E = 20, H = 70, E' = 18.
  std::vector<Tensor> inputs = {
      randn({2, 65, 20}, gen, 0, 1, dtype), randn({70, 20}, gen, 0, 0.3, dtype),
      randn({70, 20}, gen, 0, 0.3, dtype), randn({18, 70}, gen, 0, 0.3, dtype)};
  std::vector<std::string> names = {"y", "dx", "dW_gate", "dW_up", "dW_down"};
  if (bias) {
    for (int64_t n : {70, 70, 18}) inputs.push_back(randn({n}, gen, 0, 0.3, dtype));
    for (const char* name : {"db_gate", "db_up", "db_down"}) names.push_back(name);
  }
  const Tensor seed = randn({2, 65, 18}, gen, 0, 1, dtype);
  std::vector<bool> needs(needs_grad.begin(), needs_grad.begin() + inputs.size());
  expect_same_results(run(true, act, inputs, needs, seed), run(false, act, inputs, needs, seed),
                      names, dtype, what);
}

const std::vector<bool> kAll(7, true);

TEST(GatedFeedForwardOp, F32AndF64MatchTheOpsOneByOne) {
  for (UnaryOp act : {UnaryOp::kSilu, UnaryOp::kGeluErf}) {
    for (bool bias : {true, false}) {
      const std::string name = std::string(backend::unary_op_name(act)) + (bias ? "" : " no bias");
      expect_identical(act, DType::kF32, bias, kAll, "f32 " + name);
      expect_identical(act, DType::kF64, bias, kAll, "f64 " + name);
    }
  }
}

TEST(GatedFeedForwardOp, Bf16MatchesTheOpsOneByOneOnBothPaths) {
  for_each_bf16_matmul_path([](const std::string& path) {
    for (bool bias : {true, false}) {
      expect_identical(UnaryOp::kSilu, DType::kF32, bias, kAll, path + (bias ? "" : "no bias"));
    }
  });
}

TEST(GatedFeedForwardOp, PartialGradientsMatchToo) {
  // x, W_gate, W_up, W_down, b_gate, b_up, b_down: every subset the closure branches on.
  const std::vector<std::vector<bool>> subsets = {{false, false, false, true, false, false, true},
                                                  {true, false, false, false, false, false, false},
                                                  {false, true, false, false, true, false, false},
                                                  {false, false, false, false, false, true, false}};
  MatmulPrecisionGuard guard(MatmulPrecision::kBF16);
  for (const auto& needs_grad : subsets) {
    expect_identical(UnaryOp::kSilu, DType::kF32, true, needs_grad, "bf16 subset");
  }
}

TEST(GatedFeedForwardOp, RejectsBadShapesActivationsAndMixedBiases) {
  Generator gen(30);
  const Variable x(randn({3, 4}, gen), true);
  const Variable wg(randn({6, 4}, gen), true), wu(randn({6, 4}, gen), true);
  const Variable wd(randn({5, 6}, gen), true);
  const Variable bg(randn({6}, gen), true), bu(randn({6}, gen), true), bd(randn({5}, gen), true);
  EXPECT_THROW(gated_feed_forward(x, wg, bg, wu, bu, wd, bd, UnaryOp::kExp), Error);
  expect_error([&] { gated_feed_forward(x, wg, bg, wu, Variable(), wd, bd, UnaryOp::kSilu); },
               "biases");
  expect_error(
      [&] {
        gated_feed_forward(x, wg, bg, Variable(randn({7, 4}, gen)), bu, wd, bd, UnaryOp::kSilu);
      },
      "gated_feed_forward");
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
