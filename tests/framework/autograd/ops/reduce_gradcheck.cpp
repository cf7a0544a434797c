// Reduction ops: gradients against finite differences, tie and -inf rules, f32 vs f64.
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "framework/autograd/ops/elementwise.h"
#include "framework/autograd/ops/reduce.h"
#include "framework/tensor/random.h"
#include "tests/support/allclose.h"
#include "tests/support/expect_error.h"
#include "tests/support/gradcheck.h"
#include "tests/support/reduce_cases.h"
#include "tests/support/tensor_factory.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

using testing::allclose;
using testing::AxisCase;
using testing::CaseName;
using testing::expect_error;
using testing::gradcheck;
using testing::ReduceCase;
using testing::reversed_randn;
using testing::with_and_without_keepdim;
constexpr double kInf = std::numeric_limits<double>::infinity();

// The gradient of f at x computed in f32 agrees with the one computed in f64 (to 1e-5 relative),
// for the same upstream gradient: N(0, 1) values from Generator(upstream_seed).
void expect_f32_gradient_agrees_with_f64(const std::function<Variable(const Variable&)>& f,
                                         const Tensor& x, uint64_t upstream_seed) {
  std::vector<Tensor> grads;
  for (DType dtype : {DType::kF64, DType::kF32}) {
    Variable v(x.to(dtype), true);
    const Variable y = f(v);
    Generator seed_gen(upstream_seed);
    y.backward(randn(y.shape(), seed_gen, 0.0, 1.0, DType::kF64).to(dtype));
    ASSERT_EQ(v.grad().dtype(), dtype);
    grads.push_back(v.grad());
  }
  EXPECT_TRUE(allclose(grads[1], grads[0], 1e-5, 1e-6));
}

// ---- reductions ----

using ReduceFn = std::function<Variable(const Variable&, const std::vector<int64_t>&, bool)>;

struct ReduceOp {
  std::string name;
  ReduceFn op;
};

std::vector<ReduceOp> reduce_ops() {
  return {
      {"sum",
       [](const Variable& x, const std::vector<int64_t>& a, bool k) { return sum(x, a, k); }},
      {"mean",
       [](const Variable& x, const std::vector<int64_t>& a, bool k) { return mean(x, a, k); }},
      {"max",
       [](const Variable& x, const std::vector<int64_t>& a, bool k) { return max(x, a, k); }},
      {"logsumexp",
       [](const Variable& x, const std::vector<int64_t>& a, bool k) { return logsumexp(x, a, k); }},
  };
}

std::vector<ReduceCase> reduce_cases() {
  return with_and_without_keepdim({
      {{5}, {0}},
      {{2, 3, 4}, {}},
      {{2, 3, 4}, {0}},
      {{2, 3, 4}, {1}},
      {{2, 3, 4}, {-1}},
      {{2, 3, 4}, {2, 0}},
      {{2, 3, 2, 2}, {1, 2}},
      {{3, 1, 4}, {1}},
      {{3, 1, 4}, {0, 2}},
      {{}, {}},
  });
}

class ReduceGradTest : public ::testing::TestWithParam<std::tuple<ReduceOp, ReduceCase>> {};

TEST_P(ReduceGradTest, GradientMatchesFiniteDifferences) {
  const auto& [op, c] = GetParam();
  Generator gen(43);
  const auto f = [&](const std::vector<Variable>& in) { return op.op(in[0], c.axes, c.keepdim); };
  // randn values are distinct, so max has a unique winner well beyond the 1e-6 step.
  EXPECT_TRUE(gradcheck(f, {randn(c.shape, gen, 0.0, 1.0, DType::kF64)}));
  EXPECT_TRUE(gradcheck(f, {reversed_randn(c.shape, gen)})) << "non-contiguous input";
}

TEST_P(ReduceGradTest, F32GradientAgreesWithF64) {
  const auto& [op, c] = GetParam();
  Generator gen(47);
  expect_f32_gradient_agrees_with_f64(
      [&](const Variable& v) { return op.op(v, c.axes, c.keepdim); },
      randn(c.shape, gen, 0.0, 1.0, DType::kF64), 53);
}

INSTANTIATE_TEST_SUITE_P(Ops, ReduceGradTest,
                         ::testing::Combine(::testing::ValuesIn(reduce_ops()),
                                            ::testing::ValuesIn(reduce_cases())),
                         CaseName());

TEST(MaxGrad, TiedMaximaShareTheGradientEvenly) {
  // Row 0: three-way tie; row 1: unique max; row 2: two-way tie.
  Variable x(tensor_from({3, 1, 3, 3, 0, 5, 2, 1, 4, 4, 2, 0}, {3, 4}, DType::kF64), true);
  max(x, {1}).backward(tensor_from({0.6, 1.0, 2.0}, {3}, DType::kF64));
  EXPECT_TRUE(allclose(
      x.grad(), tensor_from({0.2, 0, 0.2, 0.2, 0, 1, 0, 0, 1, 1, 0, 0}, {3, 4}, DType::kF64)));
}

TEST(MaxGrad, TiesAcrossSeveralAxes) {
  // Both 7s are maxima of the whole [2,2,2] block reduced over axes {0, 2}.
  Variable x(tensor_from({7, 1, 2, 3, 0, 7, 4, 5}, {2, 2, 2}, DType::kF64), true);
  max(x, {0, 2}, true).backward(tensor_from({1.0, 1.0}, {1, 2, 1}, DType::kF64));
  EXPECT_TRUE(
      allclose(x.grad(), tensor_from({0.5, 0, 0, 0, 0, 0.5, 0, 1}, {2, 2, 2}, DType::kF64)));
}

TEST(LogSumExpGrad, AllMinusInfinityRowHasZeroGradient) {
  Variable x(tensor_from({-kInf, -kInf, 0.0, 1.0}, {2, 2}, DType::kF64), true);
  const Variable y = logsumexp(x, {1});
  EXPECT_EQ(y.data().at({0}), -kInf);
  y.backward(ones({2}, DType::kF64));
  const double p = std::exp(1.0) / (1 + std::exp(1.0));
  EXPECT_TRUE(allclose(x.grad(), tensor_from({0, 0, 1 - p, p}, {2, 2}, DType::kF64)));
}

// ---- softmax / log_softmax ----

std::vector<AxisCase> axis_cases() {
  return {{{5}, 0},        {{2, 3, 4}, 0}, {{2, 3, 4}, 1},
          {{2, 3, 4}, -1}, {{3, 1, 4}, 1}, {{2, 3, 2, 2}, -2}};
}

struct AxisOp {
  std::string name;
  std::function<Variable(const Variable&, int64_t)> op;
};

std::vector<AxisOp> axis_ops() {
  return {
      {"softmax", [](const Variable& x, int64_t a) { return softmax(x, a); }},
      {"log_softmax", [](const Variable& x, int64_t a) { return log_softmax(x, a); }},
      {"cumsum", [](const Variable& x, int64_t a) { return cumsum(x, a); }},
      {"cumsum_exclusive", [](const Variable& x, int64_t a) { return cumsum(x, a, true); }},
      {"cumsum_reverse", [](const Variable& x, int64_t a) { return cumsum(x, a, false, true); }},
      {"cumsum_exclusive_reverse",
       [](const Variable& x, int64_t a) { return cumsum(x, a, true, true); }},
  };
}

class AxisGradTest : public ::testing::TestWithParam<std::tuple<AxisOp, AxisCase>> {};

TEST_P(AxisGradTest, GradientMatchesFiniteDifferences) {
  const auto& [op, c] = GetParam();
  Generator gen(59);
  const auto f = [&](const std::vector<Variable>& in) { return op.op(in[0], c.axis); };
  EXPECT_TRUE(gradcheck(f, {randn(c.shape, gen, 0.0, 1.0, DType::kF64)}));
  EXPECT_TRUE(gradcheck(f, {reversed_randn(c.shape, gen)})) << "non-contiguous input";
}

TEST_P(AxisGradTest, F32GradientAgreesWithF64) {
  const auto& [op, c] = GetParam();
  Generator gen(61);
  expect_f32_gradient_agrees_with_f64([&](const Variable& v) { return op.op(v, c.axis); },
                                      randn(c.shape, gen, 0.0, 1.0, DType::kF64), 67);
}

INSTANTIATE_TEST_SUITE_P(Ops, AxisGradTest,
                         ::testing::Combine(::testing::ValuesIn(axis_ops()),
                                            ::testing::ValuesIn(axis_cases())),
                         CaseName());

TEST(SoftmaxGrad, LargeInputsHaveFiniteGradients) {
  Generator gen(71);
  const Tensor x = randn({3, 6}, gen, 1000.0, 2.0, DType::kF64);
  const auto f = [](const std::vector<Variable>& in) { return softmax(in[0], -1); };
  EXPECT_TRUE(gradcheck(f, {x}));
  const auto g = [](const std::vector<Variable>& in) { return log_softmax(in[0], -1); };
  EXPECT_TRUE(gradcheck(g, {x}));
}

// The fused kernels agree with their composed definitions, forward and backward:
// log_softmax(x) = x - logsumexp(x, keepdim) and softmax(x) = exp(log_softmax(x)).
TEST(SoftmaxGrad, FusedMatchesComposed) {
  Generator gen(73);
  const Tensor x = randn({3, 4, 5}, gen, 0.0, 1.5, DType::kF64);
  const Tensor seed = randn({3, 4, 5}, gen, 0.0, 1.0, DType::kF64);
  for (int64_t axis : {0, 1, 2}) {
    SCOPED_TRACE("axis " + std::to_string(axis));
    Variable a(x, true);
    Variable b(x, true);
    const Variable fused = log_softmax(a, axis);
    const Variable composed = b - logsumexp(b, {axis}, true);
    EXPECT_TRUE(allclose(fused.data(), composed.data(), 1e-13, 1e-13));
    fused.backward(seed);
    composed.backward(seed);
    EXPECT_TRUE(allclose(a.grad(), b.grad(), 1e-12, 1e-13));

    Variable c(x, true);
    Variable d(x, true);
    const Variable fused_soft = softmax(c, axis);
    const Variable composed_soft = exp(log_softmax(d, axis));
    EXPECT_TRUE(allclose(fused_soft.data(), composed_soft.data(), 1e-13, 1e-15));
    fused_soft.backward(seed);
    composed_soft.backward(seed);
    EXPECT_TRUE(allclose(c.grad(), d.grad(), 1e-12, 1e-14));
  }
}

// mean = sum / count and cumsum's last element = sum, through the graph.
TEST(ReduceGrad, MeanAndCumsumAgreeWithSum) {
  Generator gen(79);
  const Tensor x = randn({4, 6}, gen, 0.0, 1.0, DType::kF64);
  Variable a(x, true);
  Variable b(x, true);
  const Variable m = mean(a, {1});
  const Variable s = sum(b, {1}) * (1.0 / 6.0);
  EXPECT_TRUE(allclose(m.data(), s.data(), 1e-14, 1e-15));
  m.backward(ones({4}, DType::kF64));
  s.backward(ones({4}, DType::kF64));
  EXPECT_TRUE(allclose(a.grad(), b.grad(), 1e-14, 1e-15));
  const Tensor last = cumsum(Variable(x), 1).data().slice(1, 5, 6).reshape({4});
  EXPECT_TRUE(allclose(last, sum(Variable(x), {1}).data(), 1e-14, 1e-14));
}

TEST(ReduceGrad, NothingIsRecordedWithoutGrad) {
  const Variable x(ones({2, 3}, DType::kF64), false);
  for (const Variable& y : {sum(x), mean(x, {0}), max(x, {1}), logsumexp(x), softmax(x, 0),
                            log_softmax(x), cumsum(x, 1)}) {
    EXPECT_FALSE(y.requires_grad());
    EXPECT_EQ(y.grad_fn(), nullptr);
  }
}

TEST(ReduceGrad, BadAxisNamesTheOpAndShape) {
  const Variable x(zeros({2, 3}, DType::kF64), true);
  expect_error([&] { sum(x, {0, 5}); }, "sum: axis 5 out of range for shape [2,3]");
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
