// The hedgehog feature map: values against a hand loop, identity at initialisation, central
// differences of its input and parameters, and the layer's refusal of feature-position encodings.
#include "framework/nn/attention/hedgehog_feature_map.h"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "framework/nn/attention/linear_attention.h"
#include "framework/tensor/random.h"
#include "tests/support/allclose.h"
#include "tests/support/expect_error.h"
#include "tests/support/gradcheck.h"

namespace rota::nn {
namespace ROTA_TEST_FILE_NS {

using rota::testing::allclose;

// φ(x)[b, h, n, :] = [softmax(z), softmax(−z)], z_j = Σ_i x_i W[h, i, j] + bias[h, j].
std::vector<double> by_hand(const std::vector<double>& x, const std::vector<double>& w,
                            const std::vector<double>& bias, int64_t rows_per_head, int64_t heads,
                            int64_t batch, int64_t d) {
  std::vector<double> out;
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t h = 0; h < heads; ++h) {
      for (int64_t n = 0; n < rows_per_head; ++n) {
        const double* row = &x[((b * heads + h) * rows_per_head + n) * d];
        std::vector<double> z(d);
        for (int64_t j = 0; j < d; ++j) {
          z[j] = bias[h * d + j];
          for (int64_t i = 0; i < d; ++i) z[j] += row[i] * w[(h * d + i) * d + j];
        }
        for (const double sign : {1.0, -1.0}) {
          double top = -INFINITY, total = 0;
          for (double v : z) top = std::max(top, sign * v);
          for (double v : z) total += std::exp(sign * v - top);
          for (double v : z) out.push_back(std::exp(sign * v - top) / total);
        }
      }
    }
  }
  return out;
}

TEST(HedgehogFeatureMap, IsSoftmaxBothWaysOfAPerHeadProjection) {
  Generator gen(3);
  HedgehogFeatureMap map(2, 4, DType::kF64);
  // Identity and zero at initialisation.
  std::vector<double> w = map.parameter("weight").data().to_double_vector();
  for (int64_t h = 0; h < 2; ++h) {
    for (int64_t i = 0; i < 4; ++i) {
      for (int64_t j = 0; j < 4; ++j) EXPECT_EQ(w[(h * 4 + i) * 4 + j], i == j ? 1.0 : 0.0);
    }
  }
  for (double v : map.parameter("bias").data().to_double_vector()) EXPECT_EQ(v, 0.0);
  // Random parameters, then the hand loop.
  Tensor weight = map.parameter("weight").data(), bias = map.parameter("bias").data();
  weight.copy_from(randn({2, 4, 4}, gen, 0, 1, DType::kF64));
  bias.copy_from(randn({2, 4}, gen, 0, 1, DType::kF64));
  const Tensor x = randn({3, 2, 5, 4}, gen, 0, 1, DType::kF64);
  const Tensor phi = map.forward(Variable(x)).data();
  EXPECT_EQ(phi.shape(), (Shape{3, 2, 5, 8}));
  const std::vector<double> expected =
      by_hand(x.to_double_vector(), weight.to_double_vector(), bias.to_double_vector(), 5, 2, 3, 4);
  EXPECT_TRUE(allclose(phi, tensor_from(expected, {3, 2, 5, 8}, DType::kF64), 1e-13, 1e-15));
  EXPECT_EQ(map.feature_dim(), 8);
}

TEST(HedgehogFeatureMap, GradientsMatchCentralDifferences) {
  Generator gen(5);
  HedgehogFeatureMap map(2, 3, DType::kF64);
  Tensor weight = map.parameter("weight").data();
  weight.copy_from(randn({2, 3, 3}, gen, 0, 0.7, DType::kF64));
  Variable x(randn({2, 2, 4, 3}, gen, 0, 1, DType::kF64), true);
  EXPECT_TRUE(rota::testing::gradcheck_variables(
      [&] { return map.forward(x); }, {x, map.parameter("weight"), map.parameter("bias")}));
}

TEST(HedgehogFeatureMap, TheLayerRefusesEncodingsOnTheFeatures) {
  Generator gen(7);
  LinearAttentionOptions o;
  o.dim = 8;
  o.heads = 2;
  o.feature_map = FeatureMap::kHedgehog;
  o.position = LrpeOptions{};
  rota::testing::expect_error([&] { LinearAttention layer(o, gen); },
                              {"hedgehog feature map takes no positional encoding"});
  o.position = NoPosition{};
  LinearAttention layer(o, gen);
  EXPECT_EQ(layer.feature_dim(), 8);  // 2 × head dim 4
  rota::testing::expect_error([] { apply_feature_map(FeatureMap::kHedgehog, Variable()); },
                              "has parameters");
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::nn
