// Softmax attention builds every typed encoding through its one factory, and refuses the others.
#include <cmath>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "framework/nn/attention/softmax_attention.h"
#include "framework/nn/position/alibi.h"
#include "framework/nn/position/relative_xl.h"
#include "framework/nn/position/shaw.h"
#include "framework/nn/position/skew.h"
#include "framework/nn/position/t5_bias.h"
#include "tests/support/allclose.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

using testing::allclose;

nn::SoftmaxAttentionOptions options_with(const nn::PositionEncoding& position, bool causal) {
  nn::SoftmaxAttentionOptions o;
  o.dim = 8;
  o.heads = 2;
  o.causal = causal;
  o.position = position;
  o.dtype = DType::kF64;
  return o;
}

std::vector<std::string> parameter_names(const nn::Module& m) {
  std::vector<std::string> out;
  for (const auto& [name, p] : m.named_parameters()) out.push_back(name);
  return out;
}

const std::vector<std::string> kProjections = {"q_proj.weight",   "q_proj.bias",   "k_proj.weight",
                                               "k_proj.bias",     "v_proj.weight", "v_proj.bias",
                                               "out_proj.weight", "out_proj.bias"};

std::vector<std::string> projections_and(const std::vector<std::string>& extra) {
  std::vector<std::string> out = kProjections;
  out.insert(out.end(), extra.begin(), extra.end());
  return out;
}

struct Expected {
  nn::PositionEncoding position;
  std::vector<std::string> parameters;  // in registration order
  bool rope = false;                    // a `rope` child rotates q and k
  bool relative = false;                // a `position` child (RelativeAttentionEncoding)
};

TEST(SoftmaxPosition, EveryEncodingBuildsItsModuleAndParameters) {
  const std::vector<Expected> cases = {
      {nn::NoPosition{}, kProjections},
      {nn::SinusoidalPosition{}, kProjections},  // added to the embeddings by the model
      {nn::LearnedPosition{}, kProjections},
      {nn::RopePosition{}, projections_and({"rope.theta"}), true},
      {nn::AlibiPosition{}, kProjections, false, true},
      {nn::T5Position{8, 16}, projections_and({"position.weight"}), false, true},
      {nn::ShawPosition{}, projections_and({"position.key_table"}), false, true},
      {nn::TransformerXlPosition{},
       projections_and(
           {"position.pos_bias_u", "position.pos_bias_v", "position.linear_pos.weight"}),
       false, true},
      {nn::SkewPosition{16}, projections_and({"position.table"}), false, true},
  };
  Generator gen(1);
  const Tensor x = randn({2, 5, 8}, gen, 0, 1, DType::kF64);
  for (const Expected& c : cases) {
    for (bool causal : {true, false}) {
      const std::string name = nn::position_encoding_name(c.position);
      nn::SoftmaxAttention layer(options_with(c.position, causal), gen);
      EXPECT_EQ(parameter_names(layer), c.parameters) << name;
      EXPECT_EQ(layer.relative_encoding() != nullptr, c.relative) << name;
      bool has_rope = false;
      for (const auto& [child, module] : layer.named_children()) has_rope |= child == "rope";
      EXPECT_EQ(has_rope, c.rope) << name;
      EXPECT_EQ(layer.forward(Variable(x)).shape(), (Shape{2, 5, 8})) << name;
    }
  }
}

TEST(SoftmaxPosition, SettingsReachTheBuiltModules) {
  Generator gen(2);
  // RoPE: frozen θ with the given base and pairing.
  {
    const nn::SoftmaxAttention layer(
        options_with(nn::RopePosition{backend::LrpePairing::kHalf, 500.0}, true), gen);
    const auto& rope = dynamic_cast<const nn::Lrpe&>(*layer.named_children().back().second);
    EXPECT_EQ(rope.options().pairing, backend::LrpePairing::kHalf);
    EXPECT_EQ(rope.options().theta_base, 500.0);
    EXPECT_EQ(rope.options().p, backend::LrpeP::kIdentity);
    EXPECT_FALSE(rope.parameter("theta").requires_grad());
  }
  // ALiBi: one slope per head.
  {
    const nn::SoftmaxAttention layer(options_with(nn::AlibiPosition{}, true), gen);
    EXPECT_NE(dynamic_cast<const nn::Alibi*>(layer.relative_encoding().get()), nullptr);
  }
  // T5: buckets, distance, bidirectional unless causal or explicitly set, HF's init scale.
  for (bool causal : {true, false}) {
    for (std::optional<bool> bidirectional :
         {std::optional<bool>(), std::optional<bool>(true), std::optional<bool>(false)}) {
      const nn::SoftmaxAttention layer(options_with(nn::T5Position{8, 16, bidirectional}, causal),
                                       gen);
      const auto& t5 = dynamic_cast<const nn::T5RelativeBias&>(*layer.relative_encoding());
      EXPECT_EQ(t5.options().num_buckets, 8);
      EXPECT_EQ(t5.options().max_distance, 16);
      EXPECT_EQ(t5.options().bidirectional, bidirectional.value_or(!causal));
      EXPECT_DOUBLE_EQ(t5.options().init_std, 1.0 / std::sqrt(8.0));
      EXPECT_EQ(t5.weight().shape(), (Shape{8, 2}));
    }
  }
  // Shaw: clip, one-sided clips, value table.
  {
    nn::ShawPosition s;
    s.clip = 3;
    s.clip_left = 5;
    s.values = true;
    const nn::SoftmaxAttention layer(options_with(s, true), gen);
    const auto& shaw = dynamic_cast<const nn::ShawRelativeEncoding&>(*layer.relative_encoding());
    EXPECT_EQ(shaw.clip_left(), 5);
    EXPECT_EQ(shaw.clip_right(), 3);
    EXPECT_EQ(shaw.key_table().shape(), (Shape{9, 4}));
    EXPECT_TRUE(shaw.value_table().defined());
  }
  // Transformer-XL: pe width, layout, base.
  {
    const nn::SoftmaxAttention layer(
        options_with(nn::TransformerXlPosition{6, nn::SinusoidLayout::kConcatenated, 500.0}, true),
        gen);
    const auto& xl = dynamic_cast<const nn::RelativeXlEncoding&>(*layer.relative_encoding());
    EXPECT_EQ(xl.pe_dim(), 6);
    EXPECT_EQ(xl.options().layout, nn::SinusoidLayout::kConcatenated);
    EXPECT_EQ(xl.options().base, 500.0);
    EXPECT_EQ(xl.options().heads, 2);
    EXPECT_EQ(xl.options().head_dim, 4);
  }
  // Skew: table length and per-head tables.
  {
    const nn::SoftmaxAttention layer(options_with(nn::SkewPosition{6, true}, false), gen);
    const auto& skew = dynamic_cast<const nn::SkewRelativeEncoding&>(*layer.relative_encoding());
    EXPECT_EQ(skew.table().shape(), (Shape{2, 11, 4}));
  }
}

/// Every parameter of a and b, in order, bitwise equal (same names too).
void expect_same_parameters(const nn::Module& a, const nn::Module& b) {
  const auto pa = a.named_parameters(), pb = b.named_parameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (size_t i = 0; i < pa.size(); ++i) {
    EXPECT_EQ(pa[i].first, pb[i].first);
    EXPECT_TRUE(allclose(pa[i].second.data(), pb[i].second.data(), 0, 0)) << pa[i].first;
  }
}

/// The layer built from `position` equals one given `encoding` drawn first from the same seed
/// and then its projections: the table is drawn before the projections.
void expect_drawn_before_projections(
    uint64_t seed, const nn::PositionEncoding& position,
    const std::function<std::shared_ptr<nn::RelativeAttentionEncoding>(Generator&)>& encoding) {
  Generator g1(seed), g2(seed);
  nn::SoftmaxAttentionOptions custom = options_with(nn::NoPosition{}, true);
  custom.custom_encoding = encoding(g2);  // first
  const nn::SoftmaxAttention by_hand(custom, g2);
  const nn::SoftmaxAttention typed(options_with(position, true), g1);
  expect_same_parameters(typed, by_hand);
}

TEST(SoftmaxPosition, TablesDrawBeforeTheProjectionsAndT5After) {
  // Shaw, XL and skew draw their tables first, then the layer its projections; T5 draws its
  // table after the projections (the orders models have always used).
  expect_drawn_before_projections(3, nn::ShawPosition{}, [](Generator& gen) {
    nn::ShawOptions so;
    so.head_dim = 4;
    so.dtype = DType::kF64;
    return std::make_shared<nn::ShawRelativeEncoding>(so, gen);
  });
  expect_drawn_before_projections(4, nn::TransformerXlPosition{}, [](Generator& gen) {
    nn::RelativeXlOptions xo;
    xo.heads = 2;
    xo.head_dim = 4;
    xo.dtype = DType::kF64;
    return std::make_shared<nn::RelativeXlEncoding>(xo, gen);
  });
  expect_drawn_before_projections(6, nn::SkewPosition{}, [](Generator& gen) {
    nn::SkewOptions ko;
    ko.head_dim = 4;
    ko.heads = 2;
    ko.max_len = 512;
    ko.dtype = DType::kF64;
    return std::make_shared<nn::SkewRelativeEncoding>(ko, gen);
  });
  {
    Generator g1(5), g2(5);
    nn::T5BiasOptions to;
    to.heads = 2;
    to.num_buckets = 8;
    to.max_distance = 16;
    to.bidirectional = true;
    to.init_std = 1.0 / std::sqrt(8.0);
    to.dtype = DType::kF64;
    const nn::SoftmaxAttention projections(options_with(nn::NoPosition{}, false), g2);
    auto t5 = std::make_shared<nn::T5RelativeBias>(to, g2);  // after the projections
    nn::SoftmaxAttentionOptions custom = options_with(nn::NoPosition{}, false);
    custom.custom_encoding = t5;
    Generator g3(5);
    const nn::SoftmaxAttention by_hand(custom, g3);  // the same projections as `projections`
    const nn::SoftmaxAttention typed(options_with(nn::T5Position{8, 16}, false), g1);
    expect_same_parameters(typed, by_hand);
  }
}

TEST(SoftmaxPosition, RefusesLinearOnlyEncodingsNamingThem) {
  for (const nn::PositionEncoding& position : {nn::PositionEncoding(nn::LrpeOptions{}),
                                               nn::PositionEncoding(nn::PermuteFormerPosition{})}) {
    const std::string name = nn::position_encoding_name(position);
    Generator gen(5);
    try {
      nn::SoftmaxAttention layer(options_with(position, true), gen);
      FAIL() << name << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("positional encoding '" + name +
                                           "' acts on linear-attention features"),
                std::string::npos)
          << e.what();
    }
  }
  Generator gen(6);
  nn::SoftmaxAttentionOptions odd = options_with(nn::RopePosition{}, true);
  odd.dim = 6;  // D = 3
  EXPECT_THROW(nn::SoftmaxAttention(odd, gen), Error);
}

TEST(SoftmaxPosition, CustomEncodingReplacesTheTypedOne) {
  // One T5 table given to two layers is one parameter; the layers' own position is not built.
  Generator gen(7);
  nn::T5BiasOptions to;
  to.heads = 2;
  to.dtype = DType::kF64;
  auto shared = std::make_shared<nn::T5RelativeBias>(to, gen);
  nn::SoftmaxAttentionOptions o = options_with(nn::T5Position{}, true);
  o.custom_encoding = shared;
  struct Stack : nn::Module {};
  Stack stack;
  auto l0 = stack.register_module("l0", std::make_shared<nn::SoftmaxAttention>(o, gen));
  auto l1 = stack.register_module("l1", std::make_shared<nn::SoftmaxAttention>(o, gen));
  int tables = 0;
  for (const auto& [name, p] : stack.named_parameters())
    tables += name.find("position.weight") != std::string::npos;
  EXPECT_EQ(tables, 1);
  EXPECT_EQ(l0->relative_encoding(), shared);
  EXPECT_EQ(l1->relative_encoding(), shared);
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
