// linear_activation: gradients of x, W and b against central finite differences in f64.
#include <vector>

#include <gtest/gtest.h>

#include "framework/autograd/ops/matmul.h"
#include "framework/tensor/random.h"
#include "tests/support/gradcheck.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

TEST(LinearActivationGradcheck, EverySupportedActivation) {
  for (backend::UnaryOp act : {backend::UnaryOp::kRelu, backend::UnaryOp::kGeluErf,
                               backend::UnaryOp::kGeluTanh, backend::UnaryOp::kSilu}) {
    Generator gen(23);
    const std::vector<Tensor> inputs = {randn({2, 3, 5}, gen, 0, 1, DType::kF64),
                                        randn({4, 5}, gen, 0, 1, DType::kF64),
                                        randn({4}, gen, 0, 1, DType::kF64)};
    EXPECT_TRUE(testing::gradcheck(
        [&](const std::vector<Variable>& in) {
          return linear_activation(in[0], in[1], in[2], act);
        },
        inputs))
        << backend::unary_op_name(act);
  }
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
