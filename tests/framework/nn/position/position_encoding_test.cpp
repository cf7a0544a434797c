// The typed positional encodings: which attention each applies to, and their names.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "framework/nn/position/position_encoding.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

struct Row {
  nn::PositionEncoding position;
  std::string name;
  bool absolute;
  bool linear_features;
  bool linear;
  bool softmax;
};

TEST(PositionEncoding, KindsAndNames) {
  const std::vector<Row> rows = {
      {nn::NoPosition{}, "none", false, false, true, true},
      {nn::SinusoidalPosition{}, "sinusoidal", true, false, true, true},
      {nn::LearnedPosition{}, "learned_absolute", true, false, true, true},
      {nn::RopePosition{}, "rope", false, true, true, true},
      {nn::LrpeOptions{}, "lrpe", false, true, true, false},
      {nn::PermuteFormerPosition{}, "permute_former", false, true, true, false},
      {nn::AlibiPosition{}, "alibi", false, false, false, true},
      {nn::T5Position{}, "t5", false, false, false, true},
      {nn::ShawPosition{}, "shaw", false, false, false, true},
      {nn::TransformerXlPosition{}, "transformer_xl", false, false, false, true},
      {nn::SkewPosition{}, "skew", false, false, false, true},
  };
  ASSERT_EQ(rows.size(), std::variant_size_v<nn::PositionEncoding>);
  for (const Row& r : rows) {
    EXPECT_EQ(nn::position_encoding_name(r.position), r.name);
    EXPECT_EQ(nn::is_absolute(r.position), r.absolute) << r.name;
    EXPECT_EQ(nn::acts_on_linear_features(r.position), r.linear_features) << r.name;
    EXPECT_EQ(nn::applies_to_linear(r.position), r.linear) << r.name;
    EXPECT_EQ(nn::applies_to_softmax(r.position), r.softmax) << r.name;
  }
}

TEST(PositionEncoding, DefaultsMatchTheRecipeAndTheDocs) {
  // RoPE pairs adjacent channels (2k, 2k+1) everywhere: the typed option and rope_options.
  EXPECT_EQ(nn::RopePosition{}.pairing, backend::LrpePairing::kAdjacent);
  EXPECT_EQ(nn::RopePosition{}.base, 10000.0);
  const nn::LrpeOptions rope = nn::rope_options(8);
  EXPECT_EQ(rope.pairing, backend::LrpePairing::kAdjacent);
  EXPECT_EQ(rope.core, backend::LrpeCore::kOrthogonal);
  EXPECT_EQ(rope.p, backend::LrpeP::kIdentity);
  EXPECT_FALSE(rope.learn_theta);
  // LRPE: Type 2, learnable Householder P and θ.
  const nn::LrpeOptions lrpe;
  EXPECT_EQ(lrpe.core, backend::LrpeCore::kOrthogonal);
  EXPECT_EQ(lrpe.p, backend::LrpeP::kHouseholder);
  EXPECT_TRUE(lrpe.learn_householder);
  EXPECT_TRUE(lrpe.learn_theta);
  EXPECT_EQ(nn::T5Position{}.buckets, 32);
  EXPECT_EQ(nn::T5Position{}.max_distance, 128);
  EXPECT_FALSE(nn::T5Position{}.bidirectional.has_value());
  EXPECT_EQ(nn::ShawPosition{}.clip, 16);
  EXPECT_EQ(nn::SkewPosition{}.max_len, 512);
  EXPECT_EQ(nn::LearnedPosition{}.max_positions, 512);
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
