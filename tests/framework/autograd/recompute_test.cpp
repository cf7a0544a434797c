// Activation recomputation: the same values and gradients as the plain function, its dropout stream
// reproduced.
#include "framework/autograd/recompute.h"

#include <vector>

#include <gtest/gtest.h>

#include "framework/autograd/grad_mode.h"
#include "framework/autograd/ops/dropout.h"
#include "framework/autograd/ops/elementwise.h"
#include "framework/autograd/ops/matmul.h"
#include "framework/autograd/ops/reduce.h"
#include "framework/autograd/ops/shape.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

// Bit-for-bit equality of two tensors (shape and every value).
void expect_same_bits(const Tensor& actual, const Tensor& expected, const char* what) {
  ASSERT_TRUE(actual.defined()) << what;
  ASSERT_TRUE(expected.defined()) << what;
  ASSERT_EQ(actual.shape(), expected.shape()) << what;
  const std::vector<double> a = actual.to_double_vector();
  const std::vector<double> e = expected.to_double_vector();
  for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i], e[i]) << what << " element " << i;
}

// A small layer that draws from a generator: y = x + dropout(tanh(x W + b) W2, 0.3).
struct Layer {
  Variable w, b, w2;
  std::shared_ptr<Generator> rng;
  int* calls;

  Variable operator()(const Variable& x) const {
    ++*calls;
    const Variable h = tanh(linear(x, w, b));
    return x + dropout(matmul(h, w2), 0.3, *rng, true);
  }
  std::vector<Variable> parameters() const { return {w, b, w2}; }
};

struct LayerCase {
  int calls = 0;
  Layer layer;
  Variable x;
  Tensor upstream;  // the gradient arriving at the layer's output: [4, 6]

  explicit LayerCase(bool input_needs_grad) {
    Generator gen(7);
    layer.w = Variable(randn({5, 6}, gen, 0, 0.5, DType::kF64), true);  // [out, in]
    layer.b = Variable(randn({5}, gen, 0, 0.5, DType::kF64), true);
    layer.w2 = Variable(randn({5, 6}, gen, 0, 0.5, DType::kF64), true);  // [5, 6]
    layer.rng = std::make_shared<Generator>(11);
    layer.calls = &calls;
    x = Variable(randn({4, 6}, gen, 0, 1, DType::kF64), input_needs_grad);
    upstream = randn({4, 6}, gen, 0, 1, DType::kF64);
  }
};

TEST(Recompute, ValuesGradientsAndDropoutStreamEqualThePlainFunction) {
  LayerCase plain(true), again(true);
  // Plain: y = layer(x), twice (so the generator moves on as a second step would).
  const Variable y_plain = plain.layer(plain.x);
  y_plain.backward(plain.upstream);
  const Generator::State plain_after = plain.layer.rng->state();

  const Variable y = recomputed(
      "layer", [&](const Variable& in) { return again.layer(in); }, again.x,
      again.layer.parameters(), again.layer.rng);
  EXPECT_EQ(again.calls, 1);  // the forward ran once, without saving its internals
  expect_same_bits(y.data(), y_plain.data(), "output");
  const Generator::State after_forward = again.layer.rng->state();
  y.backward(again.upstream);
  EXPECT_EQ(again.calls, 2);  // and once more in the backward
  // The second run drew the same masks, and the stream is where the forward left it.
  EXPECT_EQ(again.layer.rng->state(), after_forward);
  EXPECT_EQ(again.layer.rng->state(), plain_after);
  expect_same_bits(again.x.grad(), plain.x.grad(), "dx");
  expect_same_bits(again.layer.w.grad(), plain.layer.w.grad(), "dW");
  expect_same_bits(again.layer.b.grad(), plain.layer.b.grad(), "db");
  expect_same_bits(again.layer.w2.grad(), plain.layer.w2.grad(), "dW2");
}

TEST(Recompute, ParametersGetGradientsWhenTheInputNeedsNone) {
  LayerCase plain(false), again(false);
  plain.layer(plain.x).backward(plain.upstream);
  const Variable y = recomputed(
      "layer", [&](const Variable& in) { return again.layer(in); }, again.x,
      again.layer.parameters(), again.layer.rng);
  ASSERT_TRUE(y.requires_grad());
  y.backward(again.upstream);
  EXPECT_FALSE(again.x.grad().defined());
  expect_same_bits(again.layer.w.grad(), plain.layer.w.grad(), "dW");
  expect_same_bits(again.layer.w2.grad(), plain.layer.w2.grad(), "dW2");
}

TEST(Recompute, InsideALargerGraphAndNested) {
  // z = sum(recomputed(x ↦ recomputed(layer)(x)² ) · c): gradients as the plain composition.
  LayerCase plain(true), again(true);
  const auto outer_plain = [&](const Variable& in) { return square(plain.layer(in)); };
  sum(outer_plain(plain.x * 2.0)).backward();
  const auto inner = [&](const Variable& in) {
    return recomputed(
        "inner", [&](const Variable& v) { return again.layer(v); }, in, again.layer.parameters(),
        again.layer.rng);
  };
  const Variable y = recomputed(
      "outer", [&](const Variable& in) { return square(inner(in)); }, again.x * 2.0,
      again.layer.parameters(), again.layer.rng);
  sum(y).backward();
  expect_same_bits(again.x.grad(), plain.x.grad(), "dx");
  expect_same_bits(again.layer.w.grad(), plain.layer.w.grad(), "dW");
  expect_same_bits(again.layer.b.grad(), plain.layer.b.grad(), "db");
  EXPECT_EQ(again.layer.rng->state(), plain.layer.rng->state());
}

// The multi-input, multi-output form as segments chained through a carried state: segment s maps
// (x_s, state) to (loss_s, state'), the first segment's state undefined (zeros); the sum of the
// losses has the plain chain's gradients, bit for bit, and an output nobody uses (the last
// state) gets a zero gradient.
TEST(Recompute, SeveralInputsAndOutputsChainedThroughAState) {
  LayerCase plain(true), again(true);
  const auto segment = [](const Layer& layer, const Variable& x, const Variable& state) {
    const Variable h = state.defined() ? layer(x) + state : layer(x);
    return std::vector<Variable>{sum(square(h)), tanh(h) * 0.5};
  };
  const auto rows = [](const Variable& x, int64_t r) { return narrow(x, 0, r, 2); };
  Variable total_plain, state_plain;
  for (int64_t r : {0, 2}) {
    const std::vector<Variable> out = segment(plain.layer, rows(plain.x, r), state_plain);
    total_plain = total_plain.defined() ? total_plain + out[0] : out[0];
    state_plain = out[1];
  }
  total_plain.backward();

  Variable total, state;
  for (int64_t r : {0, 2}) {
    const Variable x = rows(again.x, r);
    const std::vector<Variable> out = recomputed(
        "segment",
        [&](const std::vector<Variable>& in) { return segment(again.layer, in[0], in[1]); },
        {x, state}, again.layer.parameters(), again.layer.rng);
    ASSERT_EQ(out.size(), 2u);
    total = total.defined() ? total + out[0] : out[0];
    state = out[1];
  }
  EXPECT_EQ(again.calls, 2);
  expect_same_bits(total.data(), total_plain.data(), "loss");
  expect_same_bits(state.data(), state_plain.data(), "final state");
  total.backward();
  EXPECT_EQ(again.calls, 4);
  EXPECT_EQ(again.layer.rng->state(), plain.layer.rng->state());
  expect_same_bits(again.x.grad(), plain.x.grad(), "dx");
  expect_same_bits(again.layer.w.grad(), plain.layer.w.grad(), "dW");
  expect_same_bits(again.layer.b.grad(), plain.layer.b.grad(), "db");
  expect_same_bits(again.layer.w2.grad(), plain.layer.w2.grad(), "dW2");
}

TEST(Recompute, WithoutGradModeItIsThePlainCall) {
  LayerCase plain(true), again(true);
  NoGradGuard no_grad;
  const Variable y_plain = plain.layer(plain.x);
  const Variable y = recomputed(
      "layer", [&](const Variable& in) { return again.layer(in); }, again.x,
      again.layer.parameters(), again.layer.rng);
  EXPECT_FALSE(y.requires_grad());
  EXPECT_EQ(again.calls, 1);
  expect_same_bits(y.data(), y_plain.data(), "output");
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
