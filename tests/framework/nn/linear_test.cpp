// Linear layers sharing an input: one stacked product equals the separate layers (values and
// every gradient), with and without bias, and mismatched layers are refused.
#include "framework/nn/linear.h"

#include <gtest/gtest.h>

#include "framework/autograd/ops/elementwise.h"
#include "framework/autograd/ops/reduce.h"
#include "framework/base/error.h"
#include "framework/tensor/random.h"
#include "tests/support/allclose.h"

namespace rota::nn {
namespace ROTA_TEST_FILE_NS {

using rota::testing::allclose;

void check_shared_input_matches_separate(bool bias) {
  Generator gen(11);
  const int64_t in = 7;
  Linear a(LinearOptions{in, 5, bias, DType::kF64}, gen);
  Linear b(LinearOptions{in, 3, bias, DType::kF64}, gen);
  Linear c(LinearOptions{in, 4, bias, DType::kF64}, gen);
  const Tensor x_data = randn({2, 6, in}, gen, 0, 1, DType::kF64);
  // Distinct weights per output so every gradient path matters: L = Σ w_l ⊙ y_l.
  const std::vector<Tensor> w = {randn({2, 6, 5}, gen, 0, 1, DType::kF64),
                                 randn({2, 6, 3}, gen, 0, 1, DType::kF64),
                                 randn({2, 6, 4}, gen, 0, 1, DType::kF64)};
  const std::vector<const Linear*> layers = {&a, &b, &c};
  auto loss = [&](const std::vector<Variable>& ys) {
    Variable total = sum(ys[0] * Variable(w[0]));
    for (size_t i = 1; i < ys.size(); ++i) total = total + sum(ys[i] * Variable(w[i]));
    return total;
  };
  auto grads = [&](bool shared) {
    for (Linear* l : {&a, &b, &c}) l->zero_grad();
    Variable x(x_data.clone(), true);
    const std::vector<Variable> ys =
        shared ? forward_shared_input(layers, x)
               : std::vector<Variable>{a.forward(x), b.forward(x), c.forward(x)};
    loss(ys).backward();
    std::vector<Tensor> out = {x.grad()};
    for (const Linear* l : layers) {
      out.push_back(l->weight().grad());
      if (bias) out.push_back(l->bias().grad());
    }
    for (const Variable& y : ys) out.push_back(y.data().contiguous());
    return out;
  };
  const std::vector<Tensor> separate = grads(false);
  const std::vector<Tensor> shared = grads(true);
  ASSERT_EQ(separate.size(), shared.size());
  for (size_t i = 0; i < separate.size(); ++i) {
    EXPECT_TRUE(allclose(shared[i], separate[i], 1e-12, 1e-12)) << "tensor " << i;
  }
}

TEST(LinearSharedInput, MatchesSeparateLayersWithBias) {
  check_shared_input_matches_separate(true);
}

TEST(LinearSharedInput, MatchesSeparateLayersWithoutBias) {
  check_shared_input_matches_separate(false);
}

TEST(LinearSharedInput, RefusesLayersThatCannotStack) {
  Generator gen(3);
  Linear a(LinearOptions{4, 5, true, DType::kF32}, gen);
  Linear wider(LinearOptions{6, 5, true, DType::kF32}, gen);
  Linear no_bias(LinearOptions{4, 5, false, DType::kF32}, gen);
  const Variable x(randn({2, 4}, gen));
  EXPECT_THROW(forward_shared_input({&a, &wider}, x), Error);
  EXPECT_THROW(forward_shared_input({&a, &no_bias}, x), Error);
  EXPECT_THROW(forward_shared_input({&a, &a}, Variable(randn({2, 3}, gen))), Error);
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::nn
