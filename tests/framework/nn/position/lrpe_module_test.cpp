// LRPE module: fused kernel == composed autograd reference (forward and every gradient);
// RoPE == a direct rotary implementation; initial θ and P follow the spec.
#include <cmath>
#include <string>

#include <gtest/gtest.h>

#include "framework/autograd/ops/elementwise.h"
#include "framework/autograd/ops/reduce.h"
#include "framework/nn/position/lrpe.h"
#include "tests/support/allclose.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

using backend::LrpeCore;
using backend::LrpeP;
using backend::LrpePairing;
using nn::Lrpe;
using nn::LrpeOptions;
using testing::allclose;

/// P as the module sees it: the kernel's P plus, for Householder, whether v is trained.
struct PChoice {
  LrpeP p;
  bool learn_householder;
  const char* name;
};

constexpr PChoice kPChoices[] = {{LrpeP::kIdentity, true, "Identity"},
                                 {LrpeP::kHouseholder, true, "HouseholderLearnable"},
                                 {LrpeP::kHouseholder, false, "HouseholderFrozen"},
                                 {LrpeP::kOddEven, true, "OddEven"}};

struct ModuleCase {
  LrpeCore core;
  LrpePairing pairing;
  PChoice p;
  bool learn_theta;
};

std::string case_name(const ::testing::TestParamInfo<ModuleCase>& info) {
  const char* core[] = {"Type1", "Type2", "Type3"};
  const char* pair[] = {"Adj", "Half"};
  const auto& c = info.param;
  return std::string(core[static_cast<int>(c.core)]) + pair[static_cast<int>(c.pairing)] +
         c.p.name + (c.learn_theta ? "LearnTheta" : "FrozenTheta");
}

std::vector<ModuleCase> module_cases() {
  std::vector<ModuleCase> out;
  for (const PChoice& p : kPChoices) {
    for (bool learn : {true, false}) {
      out.push_back({LrpeCore::kUnitary, LrpePairing::kAdjacent, p, learn});
      out.push_back({LrpeCore::kOrthogonal, LrpePairing::kAdjacent, p, learn});
      out.push_back({LrpeCore::kOrthogonal, LrpePairing::kHalf, p, learn});
    }
    out.push_back({LrpeCore::kPermutation, LrpePairing::kAdjacent, p, false});
  }
  return out;
}

class LrpeModule : public ::testing::TestWithParam<ModuleCase> {};

TEST_P(LrpeModule, FusedEqualsComposedForwardAndBackward) {
  const ModuleCase c = GetParam();
  for (int64_t d : {6, 7}) {
    Generator gen(40 + d);
    LrpeOptions o;
    o.head_dim = d;
    o.core = c.core;
    o.pairing = c.pairing;
    o.p = c.p.p;
    o.learn_householder = c.p.learn_householder;
    o.learn_theta = c.learn_theta;
    o.dtype = DType::kF64;
    Lrpe module(o, gen);
    const Tensor x_data = randn({2, 3, 9, d}, gen, 0, 1, DType::kF64);
    const Tensor upstream = randn({2, 3, 9, module.feature_dim()}, gen, 0, 1, DType::kF64);

    auto run = [&](bool fused) {
      module.zero_grad();
      Variable x(x_data.clone(), true);
      Variable y = fused ? module.forward(x, 5) : module.forward_composed(x, 5);
      y.backward(upstream);
      std::vector<Tensor> grads = {x.grad()};
      for (const auto& [name, p] : module.named_parameters()) {
        if (p.requires_grad()) grads.push_back(p.grad());
      }
      return std::make_pair(y.data(), grads);
    };
    const auto [y_fused, g_fused] = run(true);
    const auto [y_ref, g_ref] = run(false);
    EXPECT_TRUE(allclose(y_fused, y_ref, 1e-12, 1e-12)) << "D=" << d;
    ASSERT_EQ(g_fused.size(), g_ref.size());
    for (size_t i = 0; i < g_fused.size(); ++i) {
      ASSERT_TRUE(g_fused[i].defined() && g_ref[i].defined()) << "gradient " << i;
      EXPECT_TRUE(allclose(g_fused[i], g_ref[i], 1e-10, 1e-10)) << "gradient " << i << " D=" << d;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Variants, LrpeModule, ::testing::ValuesIn(module_cases()), case_name);

TEST(LrpeModuleInit, ParametersFollowTheSpec) {
  Generator gen(1);
  LrpeOptions o;
  o.head_dim = 8;
  o.dtype = DType::kF64;
  Lrpe type2(o, gen);  // Type 2, learnable θ, learnable Householder
  const auto params = type2.named_parameters();
  ASSERT_EQ(params.size(), 2u);
  EXPECT_EQ(params[0].first, "theta");
  EXPECT_EQ(params[0].second.shape(), (Shape{4}));
  for (int64_t j = 0; j < 4; ++j) {
    EXPECT_DOUBLE_EQ(params[0].second.data().at({j}), std::pow(10000.0, -2.0 * j / 8));
  }
  EXPECT_EQ(params[1].first, "householder_v");
  EXPECT_TRUE(params[1].second.requires_grad());

  o.core = LrpeCore::kUnitary;
  o.p = LrpeP::kHouseholder;
  o.learn_householder = false;
  o.learn_theta = false;
  Lrpe type1(o, gen);
  const Variable theta = type1.parameter("theta");
  EXPECT_EQ(theta.shape(), (Shape{8}));  // D angles for Type 1
  EXPECT_FALSE(theta.requires_grad());
  EXPECT_DOUBLE_EQ(theta.data().at({7}), std::pow(10000.0, -14.0 / 8));
  const Variable v = type1.parameter("householder_v");
  EXPECT_FALSE(v.requires_grad());
  double norm = 0;
  for (double x : v.data().to_double_vector()) norm += x * x;
  EXPECT_NEAR(norm, 1.0, 1e-12);  // frozen vector is stored normalised

  o.core = LrpeCore::kPermutation;
  o.p = LrpeP::kIdentity;
  Lrpe type3(o, gen);
  EXPECT_TRUE(type3.named_parameters().empty());
  ASSERT_EQ(type3.named_buffers().size(), 1u);
  EXPECT_EQ(type3.named_buffers()[0].first, "permutation");
}

TEST(LrpeModuleInit, LearnableHouseholderTrainsRawVector) {
  Generator gen(2);
  LrpeOptions o;
  o.head_dim = 6;
  o.dtype = DType::kF64;
  Lrpe module(o, gen);
  Variable x(randn({1, 1, 4, 6}, gen, 0, 1, DType::kF64));
  // The raw v (not a normalised copy) is the trained parameter and receives the gradient.
  sum(module.forward(x)).backward();
  double g = 0;
  for (double e : module.parameter("householder_v").grad().to_double_vector()) g += std::abs(e);
  EXPECT_GT(g, 1e-6);
}

TEST(Rope, EqualsDirectRotaryEmbedding) {
  for (auto pairing : {LrpePairing::kHalf, LrpePairing::kAdjacent}) {
    Generator gen(3);
    const int64_t d = 8, n = 11;
    Lrpe rope(nn::rope_options(d, pairing, 10000.0, DType::kF64), gen);
    EXPECT_TRUE(rope.named_parameters()[0].second.requires_grad() == false);
    const Tensor x = randn({2, n, d}, gen, 0, 1, DType::kF64);
    const Tensor y = rope.forward(Variable(x), 3).data();
    // Direct RoPE: rotate pair k by angle s·10000^(−2k/D).
    std::vector<double> expected;
    for (int64_t b = 0; b < 2; ++b) {
      for (int64_t s = 0; s < n; ++s) {
        std::vector<double> out(d);
        for (int64_t k = 0; k < d / 2; ++k) {
          const int64_t i0 = pairing == LrpePairing::kHalf ? k : 2 * k;
          const int64_t i1 = pairing == LrpePairing::kHalf ? k + d / 2 : 2 * k + 1;
          const double a = (s + 3) * std::pow(10000.0, -2.0 * k / d);
          out[i0] = x.at({b, s, i0}) * std::cos(a) - x.at({b, s, i1}) * std::sin(a);
          out[i1] = x.at({b, s, i1}) * std::cos(a) + x.at({b, s, i0}) * std::sin(a);
        }
        expected.insert(expected.end(), out.begin(), out.end());
      }
    }
    EXPECT_TRUE(allclose(y, tensor_from(expected, {2, n, d}, DType::kF64), 1e-12, 1e-12));
  }
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
