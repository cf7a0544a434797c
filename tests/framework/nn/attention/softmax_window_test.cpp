// Sliding-window softmax attention in the layer: equals an explicit band visibility mask for every
// encoding (forward and input gradient), and the key/value-cache step equals the forward rows.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "framework/autograd/grad_mode.h"
#include "framework/autograd/ops/reduce.h"
#include "framework/nn/attention/softmax_attention.h"
#include "framework/tensor/random.h"
#include "tests/support/allclose.h"

namespace rota::nn {
namespace ROTA_TEST_FILE_NS {

using testing::allclose;

constexpr int64_t kDim = 8, kHeads = 2, kLength = 11, kWindow = 3;

struct Case {
  std::string name;
  PositionEncoding position;
};

std::vector<Case> cases() {
  ShawPosition shaw;
  shaw.clip = 2;
  shaw.values = true;  // the composed path with its own hidden mask
  return {{"none", NoPosition{}},          {"rope", RopePosition{}},
          {"alibi", AlibiPosition{}},      {"t5", T5Position{8, 20, std::nullopt}},
          {"shaw_values", shaw},           {"transformer_xl", TransformerXlPosition{}},
          {"skew", SkewPosition{16, true}}};
}

SoftmaxAttentionOptions options(const PositionEncoding& position, int64_t window) {
  SoftmaxAttentionOptions o;
  o.dim = kDim;
  o.heads = kHeads;
  o.causal = true;
  o.position = position;
  o.window = window;
  o.dtype = DType::kF64;
  return o;
}

/// [N, N] with 1 where i − W < j <= i (the causal band of width W, written out).
Tensor band(int64_t n, int64_t w) {
  std::vector<double> v(n * n, 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) v[i * n + j] = j <= i && i - j < w ? 1.0 : 0.0;
  return tensor_from(v, {n, n}, DType::kF64);
}

TEST(SoftmaxWindow, EqualsABandVisibilityMaskForEveryEncoding) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    Generator gen_a(5), gen_b(5);  // same draws: same weights
    const SoftmaxAttention windowed(options(c.position, kWindow), gen_a);
    const SoftmaxAttention masked(options(c.position, 0), gen_b);
    Generator x_gen(6);
    const Tensor x = randn({2, kLength, kDim}, x_gen, 0, 1, DType::kF64);
    const Tensor g = randn({2, kLength, kDim}, x_gen, 0, 1, DType::kF64);
    Variable xa(x, true), xb(x, true);
    const Variable ya = windowed.forward(xa);
    SoftmaxAttentionInputs inputs;
    inputs.visibility_mask = band(kLength, kWindow);
    const Variable yb = masked.forward(xb, inputs);
    EXPECT_TRUE(allclose(ya.data(), yb.data(), 1e-12, 1e-12));
    ya.backward(g);
    yb.backward(g);
    EXPECT_TRUE(allclose(xa.grad(), xb.grad(), 1e-12, 1e-12));
    // And the window changes the result (the full causal layer differs).
    EXPECT_FALSE(allclose(ya.data(), masked.forward(Variable(x)).data(), 1e-6, 1e-6));
  }
}

TEST(SoftmaxWindow, CachedStepEqualsTheForwardRows) {
  for (int64_t window : {int64_t{0}, int64_t{1}, kWindow}) {
    for (const Case& c : cases()) {
      SCOPED_TRACE(c.name + " window " + std::to_string(window));
      Generator gen(7);
      const SoftmaxAttention layer(options(c.position, window), gen);
      Generator x_gen(8);
      const Tensor x = randn({2, kLength, kDim}, x_gen, 0, 1, DType::kF64);
      NoGradGuard no_grad;
      const Tensor full = layer.forward(Variable(x)).data();  // [B, N, E]
      SoftmaxAttentionCache cache;
      for (int64_t t = 0; t < kLength; ++t) {
        const Tensor row = layer.step(x.slice(1, t, t + 1).reshape({2, kDim}).contiguous(), cache);
        EXPECT_TRUE(allclose(row, full.slice(1, t, t + 1).reshape({2, kDim}), 1e-12, 1e-12))
            << "position " << t;
        EXPECT_EQ(cache.length(), window > 0 ? std::min(t + 1, window) : t + 1);
      }
    }
  }
}

TEST(SoftmaxWindow, RefusesNegativeWindowsAndNonCausalSteps) {
  Generator gen(9);
  EXPECT_THROW(SoftmaxAttention(options(NoPosition{}, -1), gen), Error);
  SoftmaxAttentionOptions bidirectional = options(NoPosition{}, 0);
  bidirectional.causal = false;
  const SoftmaxAttention layer(bidirectional, gen);
  SoftmaxAttentionCache cache;
  EXPECT_THROW(layer.step(zeros({1, kDim}, DType::kF64), cache), Error);
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::nn
