// gated_activation op (SwiGLU / GeGLU) and a whole gated feed-forward block: gradients against
// central finite differences in f64.
#include <vector>

#include <gtest/gtest.h>

#include "framework/autograd/ops/elementwise.h"
#include "framework/autograd/ops/feed_forward.h"
#include "framework/autograd/ops/matmul.h"
#include "framework/autograd/ops/shape.h"
#include "framework/tensor/random.h"
#include "tests/support/gradcheck.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

TEST(GatedActivationGradcheck, SwigluAndGeglu) {
  for (backend::UnaryOp act : {backend::UnaryOp::kSilu, backend::UnaryOp::kGeluErf}) {
    Generator gen(17);
    const std::vector<Tensor> inputs = {randn({2, 3, 10}, gen, 0, 1.5, DType::kF64)};
    EXPECT_TRUE(testing::gradcheck(
        [&](const std::vector<Variable>& in) { return gated_activation(in[0], act); }, inputs))
        << backend::unary_op_name(act);
  }
}

TEST(GatedActivationGradcheck, GatedFeedForwardWithAndWithoutBiases) {
  // (act(x·W_gateᵀ + b_g) ⊙ (x·W_upᵀ + b_u))·W_downᵀ + b_d, the gate and up products as one.
  for (bool bias : {true, false}) {
    Generator gen(23);
    std::vector<Tensor> inputs = {
        randn({2, 3, 4}, gen, 0, 1, DType::kF64), randn({5, 4}, gen, 0, 1, DType::kF64),
        randn({5, 4}, gen, 0, 1, DType::kF64), randn({4, 5}, gen, 0, 1, DType::kF64)};
    if (bias) {
      for (int64_t n : {5, 5, 4}) inputs.push_back(randn({n}, gen, 0, 1, DType::kF64));
    }
    EXPECT_TRUE(testing::gradcheck(
        [&](const std::vector<Variable>& in) {
          const Variable gu = linear(in[0], concat({in[1], in[2]}, 0),
                                     bias ? concat({in[4], in[5]}, 0) : Variable());
          return linear(gated_activation(gu, backend::UnaryOp::kSilu), in[3],
                        bias ? in[6] : Variable());
        },
        inputs))
        << "bias " << bias;
  }
}

TEST(GatedActivationGradcheck, GatedFeedForwardOpWithAndWithoutBiases) {
  for (bool bias : {true, false}) {
    Generator gen(29);
    std::vector<Tensor> inputs = {
        randn({2, 3, 4}, gen, 0, 1, DType::kF64), randn({5, 4}, gen, 0, 1, DType::kF64),
        randn({5, 4}, gen, 0, 1, DType::kF64), randn({3, 5}, gen, 0, 1, DType::kF64)};
    if (bias) {
      for (int64_t n : {5, 5, 3}) inputs.push_back(randn({n}, gen, 0, 1, DType::kF64));
    }
    EXPECT_TRUE(testing::gradcheck(
        [&](const std::vector<Variable>& in) {
          return gated_feed_forward(in[0], in[1], bias ? in[4] : Variable(), in[2],
                                    bias ? in[5] : Variable(), in[3], bias ? in[6] : Variable(),
                                    backend::UnaryOp::kGeluErf);
        },
        inputs))
        << "bias " << bias;
  }
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
