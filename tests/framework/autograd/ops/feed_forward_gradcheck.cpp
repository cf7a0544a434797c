// feed_forward op: gradients of x, W1, b1, W2 and b2 against central finite differences (f64).
#include <vector>

#include <gtest/gtest.h>

#include "framework/autograd/ops/feed_forward.h"
#include "framework/tensor/random.h"
#include "tests/support/gradcheck.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

TEST(FeedForwardGradcheck, EverySupportedActivation) {
  for (backend::UnaryOp act : {backend::UnaryOp::kRelu, backend::UnaryOp::kGeluErf,
                               backend::UnaryOp::kGeluTanh, backend::UnaryOp::kSilu}) {
    Generator gen(31);
    const std::vector<Tensor> inputs = {
        randn({2, 3, 4}, gen, 0, 1, DType::kF64), randn({6, 4}, gen, 0, 1, DType::kF64),
        randn({6}, gen, 0, 1, DType::kF64), randn({3, 6}, gen, 0, 1, DType::kF64),
        randn({3}, gen, 0, 1, DType::kF64)};
    EXPECT_TRUE(testing::gradcheck(
        [&](const std::vector<Variable>& in) {
          return feed_forward(in[0], in[1], in[2], in[3], in[4], act);
        },
        inputs))
        << backend::unary_op_name(act);
  }
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
