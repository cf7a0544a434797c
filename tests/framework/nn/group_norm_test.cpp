// GroupNorm against a plain per-group loop, its gradients, and its shape checks.
#include <cmath>

#include <gtest/gtest.h>

#include "framework/nn/group_norm.h"
#include "framework/tensor/random.h"
#include "tests/support/gradcheck.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

TEST(GroupNorm, EachGroupNormalisedThenPerChannelAffine) {
  const int64_t rows = 5, e = 12, groups = 3, c = e / groups;
  nn::GroupNorm norm({e, groups, 1e-5, DType::kF64});
  Generator gen(3);
  StateDict sd;
  sd.insert("weight", randn({e}, gen, 1, 0.2, DType::kF64));
  sd.insert("bias", randn({e}, gen, 0, 0.2, DType::kF64));
  norm.load_state_dict(sd, true);
  const Tensor x = randn({rows, e}, gen, 0.5, 2, DType::kF64);
  const std::vector<double> got = norm.forward(Variable(x)).data().to_double_vector();
  const std::vector<double> xs = x.to_double_vector();
  const std::vector<double> w = sd.at("weight").to_double_vector();
  const std::vector<double> b = sd.at("bias").to_double_vector();
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t g = 0; g < groups; ++g) {
      double mean = 0, var = 0;
      for (int64_t i = 0; i < c; ++i) mean += xs[r * e + g * c + i] / c;
      for (int64_t i = 0; i < c; ++i) var += std::pow(xs[r * e + g * c + i] - mean, 2) / c;
      for (int64_t i = 0; i < c; ++i) {
        const int64_t j = g * c + i;
        const double expected = (xs[r * e + j] - mean) / std::sqrt(var + 1e-5) * w[j] + b[j];
        EXPECT_NEAR(got[r * e + j], expected, 1e-12) << r << "," << j;
      }
    }
  }
}

TEST(GroupNorm, GradientsOfInputWeightAndBias) {
  nn::GroupNorm norm({8, 2, 1e-5, DType::kF64});
  Generator gen(4);
  Variable x(randn({2, 3, 8}, gen, 0, 1, DType::kF64), true);
  std::vector<Variable> leaves = {x};
  for (const auto& [name, p] : norm.named_parameters()) leaves.push_back(p);
  EXPECT_EQ(leaves.size(), 3u);
  EXPECT_TRUE(testing::gradcheck_variables([&] { return norm.forward(x); }, leaves));
}

TEST(GroupNorm, RefusesIndivisibleWidthsAndWrongInputs) {
  EXPECT_THROW(nn::GroupNorm({10, 4, 1e-5, DType::kF64}), Error);
  nn::GroupNorm norm({8, 2, 1e-5, DType::kF64});
  EXPECT_THROW(norm.forward(Variable(zeros({2, 6}, DType::kF64))), Error);
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
