// feed_forward (fc1 → activation → fc2 as one op) against the layers one by one: bit for bit in
// f32 and under bf16 (native and portable paths), tightly in f64; only the requested gradients.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "framework/autograd/ops/feed_forward.h"
#include "framework/autograd/ops/matmul.h"
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
using testing::kFusedActivations;

// y and the gradients of x, W1, b1, W2, b2 (undefined where not requested).
std::vector<Tensor> run(bool fused, UnaryOp act, const std::vector<Tensor>& inputs,
                        const std::vector<bool>& needs_grad, const Tensor& seed) {
  std::vector<Variable> v;
  for (size_t i = 0; i < inputs.size(); ++i) v.emplace_back(inputs[i].clone(), needs_grad[i]);
  const Variable y = fused ? feed_forward(v[0], v[1], v[2], v[3], v[4], act)
                           : linear(linear_activation(v[0], v[1], v[2], act), v[3], v[4]);
  y.backward(seed);
  std::vector<Tensor> out = {y.data()};
  for (const Variable& x : v) out.push_back(x.grad());
  return out;
}

void expect_identical(UnaryOp act, DType dtype, const std::vector<bool>& needs_grad,
                      const std::string& what) {
  Generator gen(29);
  // 130 rows (row chunks of 64 and a partial one), E = 20, H = 70, E' = 18.
  const std::vector<Tensor> inputs = {
      randn({2, 65, 20}, gen, 0, 1, dtype), randn({70, 20}, gen, 0, 0.3, dtype),
      randn({70}, gen, 0, 0.3, dtype), randn({18, 70}, gen, 0, 0.3, dtype),
      randn({18}, gen, 0, 0.3, dtype)};
  const Tensor seed = randn({2, 65, 18}, gen, 0, 1, dtype);
  expect_same_results(run(true, act, inputs, needs_grad, seed),
                      run(false, act, inputs, needs_grad, seed),
                      {"y", "dx", "dW1", "db1", "dW2", "db2"}, dtype, what);
}

const std::vector<bool> kAll(5, true);

TEST(FeedForwardOp, F32AndF64MatchTheLayersOneByOne) {
  for (UnaryOp act : kFusedActivations) {
    expect_identical(act, DType::kF32, kAll, std::string("f32 ") + backend::unary_op_name(act));
    expect_identical(act, DType::kF64, kAll, std::string("f64 ") + backend::unary_op_name(act));
  }
}

TEST(FeedForwardOp, Bf16MatchesTheLayersOneByOneOnBothPaths) {
  for_each_bf16_matmul_path([](const std::string& path) {
    for (UnaryOp act : kFusedActivations) {
      expect_identical(act, DType::kF32, kAll, path + backend::unary_op_name(act));
    }
  });
}

TEST(FeedForwardOp, PartialGradientsMatchToo) {
  // Frozen first layer, frozen biases, frozen input: every subset the closure branches on.
  const std::vector<std::vector<bool>> subsets = {{false, false, false, true, true},
                                                  {true, false, false, false, false},
                                                  {false, true, true, false, false},
                                                  {true, true, false, true, false}};
  MatmulPrecisionGuard guard(MatmulPrecision::kBF16);
  for (const auto& needs_grad : subsets) {
    expect_identical(UnaryOp::kGeluErf, DType::kF32, needs_grad, "bf16 subset");
  }
}

TEST(FeedForwardOp, RejectsBadShapesActivationsAndMissingBiases) {
  Generator gen(30);
  const Variable x(randn({3, 4}, gen), true);
  const Variable w1(randn({6, 4}, gen), true), b1(randn({6}, gen), true);
  const Variable w2(randn({5, 6}, gen), true), b2(randn({5}, gen), true);
  EXPECT_THROW(feed_forward(x, w1, b1, w2, b2, UnaryOp::kExp), Error);
  EXPECT_THROW(feed_forward(x, w1, Variable(), w2, b2, UnaryOp::kRelu), Error);
  EXPECT_THROW(feed_forward(x, w1, b1, Variable(randn({5, 7}, gen)), b2, UnaryOp::kRelu), Error);
  expect_error(
      [&] {
        feed_forward(Variable(randn({3, 9}, gen)), w1, b1, w2, b2, UnaryOp::kRelu);
      },
      "feed_forward");
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
