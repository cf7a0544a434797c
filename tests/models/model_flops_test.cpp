// Training FLOPs per token (models/model_flops.h): the matrix-product part equals 6 × the built
// model's product weights, and the projections' share written out by hand for the plain FFN (two
// E×F products) and the gated ones (three).
#include "models/model_flops.h"

#include <gtest/gtest.h>

#include "models/language_models.h"

namespace rota::models {
namespace ROTA_TEST_FILE_NS {

/// 6 FLOPs per weight of every matrix product a causal LM runs per token (forward 2, backward
/// 4), counted from the built module: the 2-D weights of projections, gates and the FFN, plus
/// the tied output head over the vocabulary.
double six_n(const ModelOptions& o) {
  Generator gen(1);
  const CausalLm lm(o, gen, nullptr);
  double weights = 0;
  for (const auto& [name, p] : lm.named_parameters()) {
    if (p.dim() == 2 && name.find("embed") == std::string::npos) weights += double(p.numel());
  }
  return 6.0 * (weights + double(o.vocab_size) * double(o.dim));
}

TEST(ModelFlops, ProductsAreSixTimesTheProductWeightsPlusAttention) {
  ModelOptions o;
  o.vocab_size = 50;
  o.dim = 16;
  o.layers = 2;
  o.heads = 2;
  o.ffn_dim = 24;
  o.position = nn::NoPosition{};
  o.attention.chunk_size = 8;
  const int64_t n = 32;
  const double d = 8, chunk = 8;
  const double attention = 3.0 * double(o.layers * o.heads) * (2.0 * chunk * d + 4.0 * d * d);
  EXPECT_DOUBLE_EQ(training_flops_per_token(o, n), six_n(o) + attention);
  o.attention.output_gate = nn::OutputGate::kSwish;  // one more E×E product per block
  EXPECT_DOUBLE_EQ(training_flops_per_token(o, n), six_n(o) + attention);
  // The state gates' projections (GLA's low-rank pair; Mamba-2's Δ and the delta rule's β).
  o.attention.state_gate.gating = nn::StateGating::kGla;
  o.attention.state_gate.gla_rank = 3;
  EXPECT_DOUBLE_EQ(training_flops_per_token(o, n), six_n(o) + attention);
  o.attention.state_gate.gating = nn::StateGating::kSsd;
  o.attention.state_gate.rule = nn::UpdateRule::kDelta;
  EXPECT_DOUBLE_EQ(training_flops_per_token(o, n), six_n(o) + attention);
}

ModelOptions bidirectional_nope(nn::Activation act) {
  ModelOptions o;
  o.kind = ModelKind::kMaskedLm;
  o.vocab_size = 100;
  o.dim = 32;
  o.layers = 3;
  o.heads = 4;
  o.ffn_dim = 88;
  o.activation = act;
  o.position = nn::NoPosition{};
  return o;
}

TEST(ModelFlops, GatedFfnCountsThreeMatricesPlainTwo) {
  const double e = 32, f = 88, v = 100, layers = 3, heads = 4, d = 8;
  const double attention = layers * heads * 4.0 * d * d;  // bidirectional linear attention
  for (nn::Activation act :
       {nn::Activation::kGelu, nn::Activation::kSwiglu, nn::Activation::kGeglu}) {
    const double matrices = nn::is_gated(act) ? 3.0 : 2.0;
    const double forward =
        layers * 2.0 * (4.0 * e * e + matrices * e * f) + 2.0 * v * e + attention;
    EXPECT_DOUBLE_EQ(training_flops_per_token(bidirectional_nope(act), 16), 3.0 * forward)
        << static_cast<int>(act);
  }
  // Norm kind and biases add no matrix products.
  ModelOptions llama = bidirectional_nope(nn::Activation::kSwiglu);
  llama.norm_kind = nn::NormKind::kRmsNorm;
  llama.bias = false;
  EXPECT_DOUBLE_EQ(training_flops_per_token(llama, 16),
                   training_flops_per_token(bidirectional_nope(nn::Activation::kSwiglu), 16));
}

TEST(ModelFlops, HybridStackSumsItsBlocksAndAWindowCountsOnlyTheKeysInIt) {
  ModelOptions o;
  o.vocab_size = 50;
  o.dim = 16;
  o.layers = 3;
  o.heads = 2;
  o.ffn_dim = 24;
  o.position = nn::NoPosition{};
  o.attention.chunk_size = 8;
  HybridOptions h;
  h.blocks = {1};
  h.attention_family = AttentionFamily::kSoftmax;
  h.position = nn::RopePosition{};
  o.hybrid = h;
  const int64_t n = 32;
  const double d = 8, chunk = 8, heads = 2;
  const double linear = 2.0 * chunk * d + 4.0 * d * d;  // per head, per linear block
  // Causal softmax: (N + 1)/2 keys per query on average is counted as N/2.
  double softmax = 4.0 * (n / 2.0) * d;
  EXPECT_DOUBLE_EQ(training_flops_per_token(o, n),
                   six_n(o) + 3.0 * heads * (2.0 * linear + softmax));
  // A window W = 4: query i sees min(i + 1, W) keys, Σ_i / N = W − W(W − 1)/(2N).
  o.hybrid->softmax.window = 4;
  softmax = 4.0 * (4.0 - 4.0 * 3.0 / (2.0 * n)) * d;
  EXPECT_DOUBLE_EQ(training_flops_per_token(o, n),
                   six_n(o) + 3.0 * heads * (2.0 * linear + softmax));
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::models
