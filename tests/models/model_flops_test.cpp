// Analytic FLOPs per token (models/model_flops.h): the projections' share written out by hand,
// for the plain FFN (two E×F products) and the gated ones (three).
#include "models/model_flops.h"

#include <gtest/gtest.h>

namespace rota::models {
namespace {

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

}  // namespace
}  // namespace rota::models
