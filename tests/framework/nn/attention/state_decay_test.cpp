// The RetNet and TransNormerLLM decay schedules against their published formulas.
#include <cmath>

#include <gtest/gtest.h>

#include "framework/base/error.h"
#include "framework/nn/attention/state_decay.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

using nn::DecaySchedule;
using nn::StateDecayOptions;

TEST(StateDecay, RetNetRatesAreOneMinusTwoToMinusFiveMinusHead) {
  const std::vector<double> rates = nn::state_decay_rates({DecaySchedule::kRetNet, 0, 1}, 4);
  const std::vector<double> expected = {1 - 1.0 / 32, 1 - 1.0 / 64, 1 - 1.0 / 128, 1 - 1.0 / 256};
  ASSERT_EQ(rates.size(), expected.size());
  for (size_t h = 0; h < rates.size(); ++h) EXPECT_DOUBLE_EQ(rates[h], expected[h]) << h;
}

TEST(StateDecay, TransNormerRatesWeakenWithDepth) {
  // 8 heads: ALiBi slopes 2^-1 … 2^-8; block l of L: exp(−m·(1 − l/(L−1) + 1e-5)).
  for (int64_t layer = 0; layer < 3; ++layer) {
    const std::vector<double> rates =
        nn::state_decay_rates({DecaySchedule::kTransNormer, layer, 3}, 8);
    ASSERT_EQ(rates.size(), 8u);
    for (int64_t h = 0; h < 8; ++h) {
      const double slope = 1.0 / double(int64_t{1} << (h + 1));
      EXPECT_DOUBLE_EQ(rates[h], std::exp(-slope * (1.0 - layer / 2.0 + 1e-5))) << layer << h;
      EXPECT_GT(rates[h], 0.0);
      EXPECT_LT(rates[h], 1.0);
    }
  }
  // One block: l/(L−1) is taken as 0, the strongest decay. Six heads: the 4-head slopes
  // 2^-2, 2^-4, 2^-6, 2^-8, then the 8-head list's odd entries 2^-1, 2^-3.
  const std::vector<double> six = nn::state_decay_rates({DecaySchedule::kTransNormer, 0, 1}, 6);
  const std::vector<double> slopes = {0.25, 1.0 / 16, 1.0 / 64, 1.0 / 256, 0.5, 0.125};
  ASSERT_EQ(six.size(), slopes.size());
  for (size_t h = 0; h < six.size(); ++h) {
    EXPECT_DOUBLE_EQ(six[h], std::exp(-slopes[h] * (1.0 + 1e-5))) << h;
  }
}

TEST(StateDecay, NoScheduleHasNoRatesAndBadLayersAreRefused) {
  EXPECT_TRUE(nn::state_decay_rates({}, 4).empty());
  EXPECT_THROW(nn::state_decay_rates({DecaySchedule::kTransNormer, 3, 3}, 4), Error);
  EXPECT_THROW(nn::state_decay_rates({DecaySchedule::kRetNet, 0, 1}, 0), Error);
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
