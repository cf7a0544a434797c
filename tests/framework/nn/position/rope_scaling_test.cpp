// RoPE's θ rescalings (linear, Llama 3): values derived by hand, the layer's θ, and refusals.
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "framework/nn/position/lrpe.h"
#include "framework/tensor/random.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

nn::RopeScaling llama3(double factor, double low, double high, int64_t context) {
  nn::RopeScaling s;
  s.kind = nn::RopeScaling::Kind::kLlama3;
  s.factor = factor;
  s.low_freq_factor = low;
  s.high_freq_factor = high;
  s.original_max_positions = context;
  return s;
}

std::vector<double> theta_of(const nn::LrpeOptions& o) {
  Generator gen(1);
  nn::Lrpe layer(o, gen);
  for (const auto& [name, p] : layer.named_parameters()) {
    if (name == "theta") {
      EXPECT_FALSE(p.requires_grad());  // RoPE's θ stays frozen
      return p.data().to_double_vector();
    }
  }
  ADD_FAILURE() << "no theta";
  return {};
}

TEST(RopeScaling, Llama3ValuesDerivedByHand) {
  // D = 8, base 10⁴: θ = 1, 0.1, 0.01, 0.001, wavelengths 2π/θ = 6.28, 62.8, 628, 6283.
  // L = 64, low 1, high 4: λ < 16 keeps θ; λ > 64 divides by 8; 62.8 is in between with
  // s = (64/62.83 − 1)/3 = 0.0061973, θ' = (1 − s)·0.1/8 + s·0.1.
  const std::vector<double> theta = theta_of(
      nn::rope_options(8, backend::LrpePairing::kHalf, 1e4, DType::kF64, llama3(8, 1, 4, 64)));
  ASSERT_EQ(theta.size(), 4u);
  const double s = (64.0 / (2 * M_PI / 0.1) - 1.0) / 3.0;
  EXPECT_NEAR(s, 0.0061973, 1e-7);
  EXPECT_DOUBLE_EQ(theta[0], 1.0);
  EXPECT_NEAR(theta[1], 0.0130423, 1e-7);
  EXPECT_NEAR(theta[1], (1 - s) * 0.1 / 8 + s * 0.1, 1e-15);
  EXPECT_NEAR(theta[2], 0.00125, 1e-16);
  EXPECT_NEAR(theta[3], 0.000125, 1e-17);
}

TEST(RopeScaling, LinearDividesEveryFrequency) {
  nn::RopeScaling linear;
  linear.kind = nn::RopeScaling::Kind::kLinear;
  linear.factor = 4;
  const std::vector<double> plain =
      theta_of(nn::rope_options(16, backend::LrpePairing::kAdjacent, 1e4, DType::kF64));
  const std::vector<double> scaled =
      theta_of(nn::rope_options(16, backend::LrpePairing::kAdjacent, 1e4, DType::kF64, linear));
  ASSERT_EQ(plain.size(), scaled.size());
  for (size_t j = 0; j < plain.size(); ++j) {
    EXPECT_EQ(plain[j], std::pow(1e4, -2.0 * static_cast<double>(j) / 16));
    EXPECT_EQ(scaled[j], plain[j] / 4);
  }
}

TEST(RopeScaling, Llama3KeepsHighFrequenciesStretchesLowOnesAndBlendsMonotonically) {
  const nn::RopeScaling s = llama3(8, 1, 4, 8192);
  double previous = INFINITY;
  for (int64_t j = 0; j < 64; ++j) {
    const double theta = std::pow(5e5, -2.0 * static_cast<double>(j) / 128);
    const double scaled = nn::rope_scaled_frequency(theta, s);
    const double wavelength = 2 * M_PI / theta;
    if (wavelength < 8192.0 / 4) EXPECT_EQ(scaled, theta);
    if (wavelength > 8192.0) EXPECT_EQ(scaled, theta / 8);
    EXPECT_GE(scaled, theta / 8);
    EXPECT_LE(scaled, theta);
    EXPECT_LT(scaled, previous);  // still strictly decreasing in j
    previous = scaled;
  }
}

TEST(RopeScaling, SettingsOutOfRangeAreRefused) {
  EXPECT_THROW(nn::rope_scaled_frequency(0.1, llama3(0, 1, 4, 64)), Error);
  EXPECT_THROW(nn::rope_scaled_frequency(0.1, llama3(8, 4, 4, 64)), Error);
  EXPECT_THROW(nn::rope_scaled_frequency(0.1, llama3(8, 0, 4, 64)), Error);
  EXPECT_THROW(nn::rope_scaled_frequency(0.1, llama3(8, 1, 4, 0)), Error);
  nn::RopeScaling linear;
  linear.kind = nn::RopeScaling::Kind::kLinear;
  linear.factor = -2;
  EXPECT_THROW(nn::rope_scaled_frequency(0.1, linear), Error);
  EXPECT_EQ(nn::rope_scaled_frequency(0.1, nn::RopeScaling{}), 0.1);
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
