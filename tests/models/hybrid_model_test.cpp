// Hybrid stacks: per-block attention, parameter names and the softmax blocks' real layers.
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "framework/autograd/grad_mode.h"
#include "models/language_models.h"
#include "tests/support/allclose.h"

namespace rota::models {
namespace ROTA_TEST_FILE_NS {

using testing::allclose;

/// A 4-block linear LRPE stack whose blocks 1 and 3 are softmax attention with RoPE and a
/// sliding window of 3.
ModelOptions hybrid_options() {
  ModelOptions o;
  o.vocab_size = 30;
  o.dim = 16;
  o.layers = 4;
  o.heads = 2;
  o.ffn_dim = 24;
  o.init_scheme = models::InitScheme::kNormal;  // N(0, init_std²), not the default
  o.init_std = 0.3;
  o.dtype = DType::kF64;
  HybridOptions h;
  h.blocks = {1, 3};
  h.attention_family = AttentionFamily::kSoftmax;
  h.position = nn::RopePosition{};
  h.softmax.window = 3;
  o.hybrid = h;
  return o;
}

/// Names under `prefix` with the prefix removed.
std::set<std::string> names_under(const nn::Module& m, const std::string& prefix) {
  std::set<std::string> out;
  for (const auto& [name, p] : m.named_parameters()) {
    if (name.rfind(prefix, 0) == 0) out.insert(name.substr(prefix.size()));
  }
  return out;
}

TEST(HybridStack, BlockOptionsSwapOnlyTheSelectedBlocks) {
  const ModelOptions o = hybrid_options();
  for (int64_t i = 0; i < o.layers; ++i) {
    const ModelOptions b = block_options(o, i);
    EXPECT_FALSE(b.hybrid.has_value());
    EXPECT_EQ(b.attention.decay.layer, i);
    const bool selected = i == 1 || i == 3;
    EXPECT_EQ(is_hybrid_block(o, i), selected) << i;
    EXPECT_EQ(b.attention_family, selected ? AttentionFamily::kSoftmax : AttentionFamily::kLinear)
        << i;
    EXPECT_EQ(std::holds_alternative<nn::RopePosition>(b.position), selected) << i;
    EXPECT_EQ(std::holds_alternative<nn::LrpeOptions>(b.position), !selected) << i;
    EXPECT_EQ(b.softmax.window, selected ? 3 : 0) << i;
  }
  EXPECT_FALSE(all_blocks_linear(o));
}

TEST(HybridStack, SoftmaxBlocksHaveTheParametersOfASoftmaxAttentionLayer) {
  const ModelOptions o = hybrid_options();
  Generator gen(3);
  const CausalLm lm(o, gen, nullptr);
  Generator other(4);
  const nn::SoftmaxAttention standalone(softmax_attention_options(block_options(o, 1), true),
                                        other);
  Generator linear_gen(5);
  nn::LinearAttentionOptions la = block_options(o, 0).attention;
  la.dim = o.dim;
  la.heads = o.heads;
  la.causal = true;
  la.position = block_options(o, 0).position;
  const nn::LinearAttention linear(la, linear_gen);
  for (int64_t i = 0; i < o.layers; ++i) {
    const std::string prefix = "encoder.blocks." + std::to_string(i) + ".attn.";
    const std::set<std::string> names = names_under(lm, prefix);
    ASSERT_FALSE(names.empty()) << prefix;
    const bool softmax = i == 1 || i == 3;
    EXPECT_EQ(lm.encoder().block(i).is_softmax(), softmax) << i;
    EXPECT_EQ(names, names_under(softmax ? static_cast<const nn::Module&>(standalone)
                                         : static_cast<const nn::Module&>(linear),
                                 ""))
        << prefix;
  }
}

TEST(HybridStack, SoftmaxBlockEqualsAStandaloneSoftmaxAttentionWithItsWeights) {
  const ModelOptions o = hybrid_options();
  Generator gen(6);
  CausalLm lm(o, gen, nullptr);
  lm.eval();
  Generator other(7);
  nn::SoftmaxAttention standalone(softmax_attention_options(block_options(o, 3), true), other);
  standalone.load_state_dict(lm.encoder().block(3).softmax_attention().state_dict());
  standalone.eval();
  Generator x_gen(8);
  const Tensor x = randn({2, 9, o.dim}, x_gen, 0, 1, DType::kF64);
  NoGradGuard no_grad;
  const Tensor from_block = lm.encoder().block(3).softmax_attention().forward(Variable(x)).data();
  const Tensor from_layer = standalone.forward(Variable(x)).data();
  EXPECT_TRUE(allclose(from_block, from_layer, 0, 0));
  // The window of 3 is in force: a key 3 steps back does not change the row.
  Tensor changed = x.clone();
  for (int64_t e = 0; e < o.dim; ++e) changed.set({0, 2, e}, 5.0);
  const Tensor moved = standalone.forward(Variable(changed)).data();
  EXPECT_TRUE(allclose(moved.slice(1, 5, 9), from_layer.slice(1, 5, 9), 0, 0));
  EXPECT_FALSE(allclose(moved.slice(1, 2, 5), from_layer.slice(1, 2, 5), 1e-6, 1e-6));
}

TEST(HybridStack, EncoderBlocksEqualStandaloneBlocksOfTheirOwnOptions) {
  const ModelOptions o = hybrid_options();
  Generator gen(9);
  CausalLm lm(o, gen, nullptr);
  lm.eval();
  Generator x_gen(10);
  const Tensor x = randn({1, 7, o.dim}, x_gen, 0, 1, DType::kF64);
  NoGradGuard no_grad;
  for (int64_t i = 0; i < o.layers; ++i) {
    Generator other(11 + i);
    TransformerBlock standalone(block_options(o, i), true, other, nullptr);
    standalone.load_state_dict(lm.encoder().block(i).state_dict());
    standalone.eval();
    EXPECT_EQ(standalone.is_softmax(), i == 1 || i == 3);
    EXPECT_TRUE(allclose(lm.encoder().block(i).forward(Variable(x)).data(),
                         standalone.forward(Variable(x)).data(), 0, 0))
        << i;
  }
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::models
