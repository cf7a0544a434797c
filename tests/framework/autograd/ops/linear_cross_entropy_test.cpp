// Fused linear + cross-entropy op vs linear + cross_entropy through autograd: tied and untied
// weights, bias, ignored rows, reductions, the incoming gradient, no-grad mode, bf16 precision.
#include <algorithm>
#include <cmath>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "framework/autograd/grad_mode.h"
#include "framework/autograd/ops/elementwise.h"
#include "framework/autograd/ops/embedding.h"
#include "framework/autograd/ops/linear_cross_entropy.h"
#include "framework/autograd/ops/matmul.h"
#include "framework/autograd/precision.h"
#include "framework/tensor/random.h"
#include "framework/tensor/storage.h"
#include "tests/support/expect_error.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

// Every |actual − expected| <= rel·max|expected| (one scale per tensor: gradients mix large
// and near-zero elements, whose rounding follows the tensor's scale, not their own).
::testing::AssertionResult close_to(const Tensor& actual, const Tensor& expected, double rel) {
  if (actual.shape() != expected.shape() || actual.dtype() != expected.dtype()) {
    return ::testing::AssertionFailure()
           << dtype_name(actual.dtype()) << shape_str(actual.shape()) << " vs "
           << dtype_name(expected.dtype()) << shape_str(expected.shape());
  }
  const std::vector<double> a = actual.to_double_vector(), e = expected.to_double_vector();
  double scale = 0;
  for (double v : e) scale = std::max(scale, std::fabs(v));
  for (size_t i = 0; i < a.size(); ++i) {
    if (!(std::fabs(a[i] - e[i]) <= rel * scale)) {
      return ::testing::AssertionFailure() << "element " << i << ": " << a[i] << " vs " << e[i]
                                           << " (tolerance " << rel * scale << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

double distance(const Tensor& a, const Tensor& b) {
  const std::vector<double> x = a.to_double_vector(), y = b.to_double_vector();
  double s = 0;
  for (size_t i = 0; i < x.size(); ++i) s += (x[i] - y[i]) * (x[i] - y[i]);
  return std::sqrt(s);
}

struct HeadCase {
  std::string name;
  bool tied;  // the head's weight is the embedding table that produced the hidden states
  bool bias;
  double smoothing;
  Reduction reduction;
  std::vector<int64_t> ignored_rows;
  double incoming_gradient = 1.0;  // backward of incoming_gradient·loss
};

void PrintTo(const HeadCase& c, std::ostream* os) {
  *os << c.name;
}

std::vector<HeadCase> head_cases() {
  const Reduction mean = Reduction::kMean, sum = Reduction::kSum;
  return {
      {"tied_mean", true, false, 0.0, mean, {}},
      {"untied_mean", false, false, 0.0, mean, {}},
      {"tied_bias_smoothing_ignored", true, true, 0.1, mean, {0, 5, 13}},
      {"untied_bias_sum_ignored", false, true, 0.0, sum, {2, 3}, 0.5},
      {"tied_sum_smoothing", true, false, 0.2, sum, {}, -1.7},
      {"untied_mean_scaled", false, true, 0.0, mean, {7}, 3.0},
      {"all_ignored_mean",
       true,
       true,
       0.0,
       mean,
       {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14}},
  };
}

constexpr int64_t kBatch = 3, kLength = 5, kEmbed = 6, kVocab = 11;

struct HeadResult {
  Tensor loss;
  std::vector<Tensor> grads;  // table, projection, head weight (untied), bias
};

// A small LM head: hidden = tanh(embedding(ids, table)·P): [B, N, E]; loss over the vocabulary
// with the head weight (the table itself when tied) and an optional bias.
HeadResult run_head(const HeadCase& c, DType dtype, bool fused) {
  Generator gen(31);
  const Tensor ids = randint({kBatch, kLength}, gen, 0, kVocab, DType::kI64);
  Tensor targets = randint({kBatch, kLength}, gen, 0, kVocab, DType::kI64);
  for (int64_t r : c.ignored_rows) targets.view({kBatch * kLength}).set({r}, -100);
  const Variable table(randn({kVocab, kEmbed}, gen, 0.0, 1.0, dtype), true);
  const Variable projection(randn({kEmbed, kEmbed}, gen, 0.0, 0.5, dtype), true);
  const Variable head =
      c.tied ? table : Variable(randn({kVocab, kEmbed}, gen, 0.0, 1.0, dtype), true);
  const Variable bias = c.bias ? Variable(randn({kVocab}, gen, 0.0, 1.0, dtype), true) : Variable();

  const Variable hidden = tanh(matmul(embedding(ids, table), projection));
  const Variable loss =
      fused ? linear_cross_entropy(hidden, head, bias, targets, -100, c.smoothing, c.reduction)
            : cross_entropy(linear(hidden, head, bias), targets, -100, c.smoothing, c.reduction);
  (loss * c.incoming_gradient).backward();
  HeadResult r{loss.data(), {table.grad(), projection.grad()}};
  if (!c.tied) r.grads.push_back(head.grad());
  if (c.bias) r.grads.push_back(bias.grad());
  return r;
}

class FusedHead : public ::testing::TestWithParam<HeadCase> {};

void expect_same(const HeadResult& fused, const HeadResult& composed, double rel) {
  if (std::isnan(composed.loss.item())) {
    EXPECT_TRUE(std::isnan(fused.loss.item()));
  } else {
    EXPECT_TRUE(close_to(fused.loss, composed.loss, rel));
  }
  ASSERT_EQ(fused.grads.size(), composed.grads.size());
  for (size_t i = 0; i < fused.grads.size(); ++i) {
    SCOPED_TRACE("gradient " + std::to_string(i));
    ASSERT_TRUE(fused.grads[i].defined() && composed.grads[i].defined());
    EXPECT_TRUE(close_to(fused.grads[i], composed.grads[i], rel));
  }
}

TEST_P(FusedHead, EqualsComposedF64) {
  expect_same(run_head(GetParam(), DType::kF64, true), run_head(GetParam(), DType::kF64, false),
              1e-13);
}

TEST_P(FusedHead, EqualsComposedF32) {
  expect_same(run_head(GetParam(), DType::kF32, true), run_head(GetParam(), DType::kF32, false),
              2e-6);
}

INSTANTIATE_TEST_SUITE_P(Cases, FusedHead, ::testing::ValuesIn(head_cases()),
                         [](const ::testing::TestParamInfo<HeadCase>& info) {
                           return info.param.name;
                         });

TEST(LinearCrossEntropyOp, AllIgnoredMeanIsNanWithZeroGradients) {
  HeadCase c = head_cases().back();
  const HeadResult r = run_head(c, DType::kF64, true);
  EXPECT_TRUE(std::isnan(r.loss.item()));
  for (const Tensor& g : r.grads) {
    for (double v : g.to_double_vector()) EXPECT_EQ(v, 0.0);
  }
}

// ---- what is computed ----

struct Sizes {
  int64_t rows = 4096, embed = 64, vocab = 64;
};

struct Inputs {
  Variable hidden, weight;
  Tensor targets;
};

// hidden [rows, embed] and weight [vocab, embed] of N(0, 1) f32 values (the weight requires
// grad), targets in [0, vocab): drawn from Generator(seed) in that order.
Inputs random_inputs(const Sizes& s, uint64_t seed, bool hidden_requires_grad) {
  Generator gen(seed);
  const Variable hidden(randn({s.rows, s.embed}, gen), hidden_requires_grad);
  const Variable weight(randn({s.vocab, s.embed}, gen), true);
  return {hidden, weight, randint({s.rows}, gen, 0, s.vocab, DType::kI64)};
}

// Peak tensor bytes allocated while computing the loss (not the backward).
int64_t loss_peak_bytes(const Variable& hidden, const Variable& weight, const Tensor& targets) {
  const int64_t before = storage_stats().live_bytes;
  reset_storage_peak();
  const Variable loss = linear_cross_entropy(hidden, weight, Variable(), targets);
  return storage_stats().peak_bytes - before;
}

TEST(LinearCrossEntropyOp, EvaluationComputesNoGradients) {
  const Sizes s;
  const auto [hidden, weight, targets] = random_inputs(s, 5, true);
  const int64_t grad_hidden_bytes = s.rows * s.embed * 4;
  // With gradients: they are computed (and held) in the forward pass.
  EXPECT_GE(loss_peak_bytes(hidden, weight, targets), grad_hidden_bytes);
  // Under NoGradGuard: a loss without a graph, and no gradient buffers (one [256, V] tile).
  NoGradGuard no_grad;
  const Variable loss = linear_cross_entropy(hidden, weight, Variable(), targets);
  EXPECT_FALSE(loss.requires_grad());
  EXPECT_LT(loss_peak_bytes(hidden, weight, targets), grad_hidden_bytes / 4);
}

TEST(LinearCrossEntropyOp, OnlyInputsThatNeedGradientsGetThem) {
  const Sizes s;
  const auto [hidden, weight, targets] = random_inputs(s, 6, false);
  // No [R, E] hidden gradient: the weight's [V, E] and one tile only.
  EXPECT_LT(loss_peak_bytes(hidden, weight, targets), s.rows * s.embed * 4 / 4);
  const Variable loss = linear_cross_entropy(hidden, weight, Variable(), targets);
  loss.backward();
  const Variable w2(weight.data(), true);
  cross_entropy(linear(hidden, w2), targets).backward();
  EXPECT_TRUE(close_to(weight.grad(), w2.grad(), 2e-6));
}

// ---- bf16 ----

struct Bf16Result {
  Tensor loss;
  std::vector<Tensor> grads;  // hidden, weight, bias
};

Bf16Result run_bf16_head(bool fused, MatmulPrecision precision) {
  Generator gen(8);
  const Variable hidden(randn({4, 33, 24}, gen), true);
  const Variable weight(randn({300, 24}, gen, 0.0, 0.5), true);
  const Variable bias(randn({300}, gen), true);
  Tensor targets = randint({4, 33}, gen, 0, 300, DType::kI64);
  targets.set({1, 7}, -100);
  const MatmulPrecisionGuard guard(precision);
  const Variable loss =
      fused ? linear_cross_entropy(hidden, weight, bias, targets, -100, 0.1)
            : cross_entropy(matmul(hidden, weight, false, true) + bias, targets, -100, 0.1);
  loss.backward();
  return {loss.data(), {hidden.grad(), weight.grad(), bias.grad()}};
}

// Native: oneDNN's bf16 kernels; Portable: the forced fallback (bf16 values multiplied in f32).
class LinearCrossEntropyBf16 : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override { force_bf16_matmul_emulation(GetParam()); }
  void TearDown() override { force_bf16_matmul_emulation(false); }
};

// Fused and composed under kBF16 multiply the same bf16 operands and round the same dlogits,
// except where their exps differ across a bf16 rounding boundary (rare; one bf16 ulp each):
// the fused result lies far closer to the composed bf16 one than to the f32 one.
TEST_P(LinearCrossEntropyBf16, FusedMatchesComposedMatmulAndCrossEntropy) {
  const Bf16Result fused = run_bf16_head(true, MatmulPrecision::kBF16);
  const Bf16Result composed = run_bf16_head(false, MatmulPrecision::kBF16);
  const Bf16Result f32 = run_bf16_head(false, MatmulPrecision::kF32);
  EXPECT_TRUE(close_to(fused.loss, composed.loss, 2e-6));
  EXPECT_FALSE(close_to(fused.loss, f32.loss, 2e-6));  // the products really were bf16
  for (size_t i = 0; i < 3; ++i) {
    SCOPED_TRACE("gradient " + std::to_string(i));
    EXPECT_TRUE(close_to(fused.grads[i], composed.grads[i], std::ldexp(1.0, -8)));
    EXPECT_LT(distance(fused.grads[i], composed.grads[i]) * 8,
              distance(composed.grads[i], f32.grads[i]));
  }
}

INSTANTIATE_TEST_SUITE_P(Paths, LinearCrossEntropyBf16, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return std::string(info.param ? "Portable" : "Native");
                         });

// ---- errors ----

using rota::testing::expect_error;

TEST(LinearCrossEntropyOp, BadInputsAreErrorsNamingTheOpAndShapes) {
  const Variable hidden(zeros({2, 3, 5}), true);
  const Variable weight(zeros({7, 5}), true);
  const Tensor targets = zeros({2, 3}, DType::kI64);
  expect_error(
      [&] {
        linear_cross_entropy(hidden, Variable(zeros({7, 4}), true), Variable(), targets);
      },
      "linear_cross_entropy: hidden [2,3,5] and weight [7,4]: embedding dims differ");
  expect_error(
      [&] {
        linear_cross_entropy(hidden, weight, Variable(), zeros({3, 2}, DType::kI64));
      },
      "linear_cross_entropy: hidden [2,3,5] needs targets [2,3], got [3,2]");
  expect_error([&] { linear_cross_entropy(hidden, weight, Variable(zeros({5})), targets); },
               "linear_cross_entropy: bias [5] does not match weight [7,5] (expected [7])");
  expect_error(
      [&] {
        linear_cross_entropy(hidden, weight, Variable(), targets, -100, 0.0, Reduction::kNone);
      },
      "linear_cross_entropy: reduction none is not supported");
  // Under bf16 the operands are rounded first; the error still names the caller's shapes.
  const MatmulPrecisionGuard bf16(MatmulPrecision::kBF16);
  expect_error(
      [&] {
        linear_cross_entropy(hidden, Variable(zeros({7, 4}), true), Variable(), targets);
      },
      "linear_cross_entropy: hidden [2,3,5] and weight [7,4]: embedding dims differ");
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
