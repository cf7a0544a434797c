// FeedForward with gated activations (SwiGLU, GeGLU) and without biases, and make_norm: the
// parameters each builds, and the module's output against the layers applied one by one.
#include "framework/nn/feed_forward.h"

#include <set>
#include <string>

#include <gtest/gtest.h>

#include "framework/autograd/ops/elementwise.h"
#include "framework/autograd/ops/matmul.h"
#include "framework/autograd/ops/reduce.h"
#include "framework/nn/norm.h"
#include "framework/tensor/random.h"
#include "tests/support/allclose.h"
#include "tests/support/expect_error.h"
#include "tests/support/fused_vs_composed.h"

namespace rota::nn {
namespace ROTA_TEST_FILE_NS {

using rota::testing::allclose;

std::set<std::string> names(const Module& m) {
  std::set<std::string> out;
  for (const auto& [name, p] : m.named_parameters()) out.insert(name);
  return out;
}

FeedForwardOptions options(Activation act, bool bias) {
  FeedForwardOptions o;
  o.dim = 6;
  o.hidden_dim = 10;
  o.activation = act;
  o.bias = bias;
  o.dtype = DType::kF64;
  return o;
}

TEST(FeedForward, GatedBuildsGateUpDownAndComputesSiluOrGeluGate) {
  for (Activation act : {Activation::kSwiglu, Activation::kGeglu}) {
    for (bool bias : {true, false}) {
      Generator gen(3);
      const FeedForward ffn(options(act, bias), gen, nullptr);
      const std::set<std::string> want =
          bias ? std::set<std::string>{"gate_proj.weight", "gate_proj.bias",   "up_proj.weight",
                                       "up_proj.bias",     "down_proj.weight", "down_proj.bias"}
               : std::set<std::string>{"gate_proj.weight", "up_proj.weight", "down_proj.weight"};
      EXPECT_EQ(names(ffn), want);
      const auto params = ffn.named_parameters();
      auto get = [&](const std::string& name) {
        for (const auto& [n, p] : params) {
          if (n == name) return p;
        }
        return Variable();
      };
      EXPECT_EQ(get("gate_proj.weight").shape(), (Shape{10, 6}));
      EXPECT_EQ(get("up_proj.weight").shape(), (Shape{10, 6}));
      EXPECT_EQ(get("down_proj.weight").shape(), (Shape{6, 10}));
      const Variable x(randn({2, 3, 6}, gen, 0, 1, DType::kF64));
      const Variable gate = linear(x, get("gate_proj.weight"), get("gate_proj.bias"));
      const Variable up = linear(x, get("up_proj.weight"), get("up_proj.bias"));
      const Variable activated = act == Activation::kSwiglu ? silu(gate) : gelu(gate, false);
      const Variable want_y =
          linear(activated * up, get("down_proj.weight"), get("down_proj.bias"));
      EXPECT_TRUE(allclose(ffn.forward(x).data(), want_y.data(), 1e-12, 1e-12));
    }
  }
}

// Under bf16 matmul precision the gated FFN multiplies bf16-rounded operands: its output stays
// within bf16 rounding of the f32 one, and every parameter gets a gradient.
TEST(FeedForward, GatedUnderBf16StaysWithinRoundingOfF32) {
  Generator gen(6);
  FeedForwardOptions o = options(Activation::kSwiglu, true);
  o.dim = 32;
  o.hidden_dim = 48;
  o.dtype = DType::kF32;
  FeedForward ffn(o, gen, nullptr);
  const Tensor x = randn({4, 32}, gen);
  const Tensor want = ffn.forward(Variable(x)).data();
  rota::testing::for_each_bf16_matmul_path([&](const std::string& label) {
    ffn.zero_grad();
    const Variable y = ffn.forward(Variable(x));
    // Two products of width 32 and 48 on bf16 operands (relative rounding 2^-9 each).
    EXPECT_TRUE(allclose(y.data(), want, 3e-2, 3e-2)) << label;
    sum(y).backward();
    for (const auto& [name, p] : ffn.named_parameters()) {
      EXPECT_TRUE(p.grad().defined()) << label << name;
    }
  });
}

// With active dropout the gated FFN takes the composed path (one [gate | up] product, the gated
// activation, dropout, down_proj): zeroed hidden units change the output, and with the same
// dropout stream it is reproducible; in eval mode it is the fused op's output again.
TEST(FeedForward, GatedWithActiveDropoutUsesTheDropoutStream) {
  for (bool bias : {true, false}) {
    Generator gen(8);
    FeedForwardOptions o = options(Activation::kSwiglu, bias);
    o.dropout = 0.5;
    FeedForward a(o, gen, std::make_shared<Generator>(3));
    Generator gen_b(8);
    FeedForward b(o, gen_b, std::make_shared<Generator>(3));
    const Tensor x = randn({5, 6}, gen, 0, 1, DType::kF64);
    a.eval();
    const Tensor eval_y = a.forward(Variable(x)).data();
    a.train();
    b.train();
    const Variable ya = a.forward(Variable(x));
    const Tensor yb = b.forward(Variable(x)).data();
    EXPECT_EQ(ya.data().to_double_vector(), yb.to_double_vector()) << "bias " << bias;
    EXPECT_FALSE(allclose(ya.data(), eval_y, 1e-6, 1e-6)) << "bias " << bias;
    sum(ya).backward();
    for (const auto& [name, p] : a.named_parameters()) {
      EXPECT_TRUE(p.grad().defined()) << name;
    }
  }
}

TEST(FeedForward, WithoutBiasesKeepsOnlyWeightsAndMatchesTheLayers) {
  for (Activation act : {Activation::kGelu, Activation::kRelu}) {
    Generator gen(4);
    const FeedForward ffn(options(act, false), gen, nullptr);
    EXPECT_EQ(names(ffn), (std::set<std::string>{"fc1.weight", "fc2.weight"}));
    const auto params = ffn.named_parameters();
    const Variable x(randn({4, 6}, gen, 0, 1, DType::kF64), true);
    const Variable y = ffn.forward(x);
    const Variable want =
        linear(apply_activation(act, linear(x, params[0].second)), params[1].second);
    EXPECT_TRUE(allclose(y.data(), want.data(), 1e-12, 1e-12));
    sum(y).backward();  // the zero biases stand in without gradients of their own
    EXPECT_TRUE(x.grad().defined());
    EXPECT_TRUE(params[0].second.grad().defined());
  }
}

TEST(FeedForward, GatedActivationsHaveNoSingleInputForm) {
  Generator gen(1);
  const Variable x(randn({2, 3}, gen));
  rota::testing::expect_error([&] { apply_activation(Activation::kSwiglu, x); }, "gated");
  EXPECT_EQ(parse_activation("swiglu"), Activation::kSwiglu);
  EXPECT_EQ(parse_activation("geglu"), Activation::kGeglu);
  EXPECT_TRUE(is_gated(Activation::kGeglu));
  EXPECT_FALSE(is_gated(Activation::kSilu));
}

TEST(MakeNorm, LayerNormWithAndWithoutBetaAndRmsNorm) {
  const NormOptions with_bias{5, 1e-5, true, DType::kF64, true};
  const NormOptions without_bias{5, 1e-5, true, DType::kF64, false};
  EXPECT_EQ(names(*make_norm(NormKind::kLayerNorm, with_bias)),
            (std::set<std::string>{"weight", "bias"}));
  EXPECT_EQ(names(*make_norm(NormKind::kLayerNorm, without_bias)),
            (std::set<std::string>{"weight"}));
  EXPECT_EQ(names(*make_norm(NormKind::kRmsNorm, with_bias)), (std::set<std::string>{"weight"}));
  // RMSNorm: x / √(mean(x²) + eps) with the unit weight it starts from.
  const Tensor x = tensor_from({1.0, -2.0, 3.0, 0.5, 2.5}, {1, 5}, DType::kF64);
  const Tensor y = make_norm(NormKind::kRmsNorm, with_bias)->forward(Variable(x)).data();
  const double rms = std::sqrt((1.0 + 4.0 + 9.0 + 0.25 + 6.25) / 5.0 + 1e-5);
  EXPECT_TRUE(allclose(
      y, tensor_from({1.0 / rms, -2.0 / rms, 3.0 / rms, 0.5 / rms, 2.5 / rms}, {1, 5}, DType::kF64),
      1e-14, 1e-14));
  // LayerNorm without β equals the one with a zero β.
  const Tensor ln = make_norm(NormKind::kLayerNorm, without_bias)->forward(Variable(x)).data();
  const Tensor ln_beta = make_norm(NormKind::kLayerNorm, with_bias)->forward(Variable(x)).data();
  EXPECT_EQ(ln.to_double_vector(), ln_beta.to_double_vector());
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::nn
