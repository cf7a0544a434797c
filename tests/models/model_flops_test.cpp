// Training FLOPs per token: the matrix-product part equals 6 × the built model's product weights.
#include <gtest/gtest.h>

#include "models/language_models.h"
#include "models/model_flops.h"

namespace rota::models {
namespace {

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

}  // namespace
}  // namespace rota::models
