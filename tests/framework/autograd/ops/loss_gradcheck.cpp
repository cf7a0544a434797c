// Cross-entropy: forward against a double log-softmax loop, gradients against finite differences.
#include <cmath>
#include <functional>
#include <limits>
#include <ostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "framework/autograd/ops/loss.h"
#include "framework/backend/primitives/elementwise.h"
#include "framework/tensor/random.h"
#include "tests/support/allclose.h"
#include "tests/support/expect_error.h"
#include "tests/support/gradcheck.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

using testing::allclose;
using testing::gradcheck;

// The loss straight from the definition, in double: log-probabilities by log-softmax, then the
// cross-entropy against the smoothed target distribution q = (1-ε)·onehot(t) + ε/C.
Tensor reference_loss(const Tensor& logits, const Tensor& targets, int64_t ignore_index,
                      double smoothing, Reduction reduction) {
  const int64_t c = logits.size(-1);
  const int64_t rows = logits.numel() / c;
  const std::vector<double> z = logits.to_double_vector();
  const std::vector<double> t = targets.to_double_vector();
  std::vector<double> losses(rows, 0.0);
  double total = 0.0;
  int64_t count = 0;
  for (int64_t r = 0; r < rows; ++r) {
    if (static_cast<int64_t>(t[r]) == ignore_index) continue;
    double m = z[r * c];
    for (int64_t k = 1; k < c; ++k) m = std::max(m, z[r * c + k]);
    double s = 0;
    for (int64_t k = 0; k < c; ++k) s += std::exp(z[r * c + k] - m);
    const double lse = m + std::log(s);
    double loss = 0;
    for (int64_t k = 0; k < c; ++k) {
      const double q = (k == static_cast<int64_t>(t[r]) ? 1.0 - smoothing : 0.0) + smoothing / c;
      if (q != 0.0) loss -= q * (z[r * c + k] - lse);  // 0·log 0 = 0 for masked (-inf) logits
    }
    losses[r] = loss;
    total += loss;
    ++count;
  }
  switch (reduction) {
    case Reduction::kNone:
      return tensor_from(losses, targets.shape(), DType::kF64);
    case Reduction::kSum:
      return scalar_tensor(total, DType::kF64);
    case Reduction::kMean:
      return scalar_tensor(total / count, DType::kF64);
  }
  return Tensor();
}

struct LossCase {
  std::string name;
  Shape logits_shape;
  double smoothing;
  Reduction reduction;
  DType target_dtype;
  int64_t ignore_index;
};

// gtest prints parameters by name instead of as raw bytes.
void PrintTo(const LossCase& c, std::ostream* os) {
  *os << c.name;
}

std::vector<LossCase> loss_cases() {
  std::vector<LossCase> cases;
  const std::vector<std::pair<std::string, Shape>> shapes = {
      {"2d", {6, 5}}, {"3d", {2, 3, 4}}, {"1d", {7}}};
  for (const auto& [shape_name, shape] : shapes) {
    for (double smoothing : {0.0, 0.1}) {
      for (Reduction reduction : {Reduction::kNone, Reduction::kMean, Reduction::kSum}) {
        const bool i32 = cases.size() % 2 == 1;  // alternate target dtypes across the table
        cases.push_back({shape_name + (smoothing > 0 ? "_smooth_" : "_") +
                             backend::reduction_name(reduction) + (i32 ? "_i32" : "_i64"),
                         shape, smoothing, reduction, i32 ? DType::kI32 : DType::kI64, -100});
      }
    }
  }
  // An ignore_index inside [0, C): rows with that class are skipped, not scored.
  cases.push_back({"ignore_in_range", {6, 5}, 0.2, Reduction::kMean, DType::kI64, 2});
  return cases;
}

// Random targets in [0, C); with more than one row, rows 1 and 4 (when present) are ignored.
Tensor make_targets(const LossCase& c, Generator& gen) {
  const Shape lead(c.logits_shape.begin(), c.logits_shape.end() - 1);
  const int64_t classes = c.logits_shape.back();
  Tensor t = randint(lead, gen, 0, classes, DType::kI64);
  if (shape_numel(lead) > 1) {
    Tensor flat = t.view({shape_numel(lead)});
    flat.set({1}, static_cast<double>(c.ignore_index));
    if (shape_numel(lead) > 4) flat.set({4}, static_cast<double>(c.ignore_index));
  }
  return t.to(c.target_dtype);
}

class CrossEntropyTest : public ::testing::TestWithParam<LossCase> {};

TEST_P(CrossEntropyTest, ForwardMatchesReference) {
  const LossCase& c = GetParam();
  Generator gen(41);
  const Tensor logits = randn(c.logits_shape, gen, 0.0, 2.0, DType::kF64);
  const Tensor targets = make_targets(c, gen);
  const Tensor expected = reference_loss(logits, targets, c.ignore_index, c.smoothing, c.reduction);
  const Tensor loss =
      cross_entropy(Variable(logits), targets, c.ignore_index, c.smoothing, c.reduction).data();
  EXPECT_TRUE(allclose(loss, expected, 1e-12, 1e-12));
  const Tensor loss32 = cross_entropy(Variable(logits.to(DType::kF32)), targets, c.ignore_index,
                                      c.smoothing, c.reduction)
                            .data();
  EXPECT_EQ(loss32.dtype(), DType::kF32);
  EXPECT_TRUE(allclose(loss32, expected.to(DType::kF32), 1e-5, 1e-6));
}

TEST_P(CrossEntropyTest, LogitGradientMatchesFiniteDifferences) {
  const LossCase& c = GetParam();
  Generator gen(42);
  const Tensor logits = randn(c.logits_shape, gen, 0.0, 2.0, DType::kF64);
  const Tensor targets = make_targets(c, gen);
  EXPECT_TRUE(gradcheck(
      [&](const std::vector<Variable>& in) {
        return cross_entropy(in[0], targets, c.ignore_index, c.smoothing, c.reduction);
      },
      {logits}));
}

INSTANTIATE_TEST_SUITE_P(Cases, CrossEntropyTest, ::testing::ValuesIn(loss_cases()),
                         [](const ::testing::TestParamInfo<LossCase>& info) {
                           return info.param.name;
                         });

TEST(CrossEntropy, LargeLogitsStayFinite) {
  Generator gen(43);
  const Tensor logits = backend::add_scalar(randn({4, 6}, gen, 0.0, 1.0, DType::kF64), 1000.0);
  const Tensor targets = randint({4}, gen, 0, 6);
  const Tensor loss = cross_entropy(Variable(logits), targets).data();
  EXPECT_TRUE(
      allclose(loss, reference_loss(logits, targets, -100, 0.0, Reduction::kMean), 1e-9, 1e-12));
  EXPECT_TRUE(allclose(cross_entropy(Variable(logits.to(DType::kF32)), targets).data(),
                       loss.to(DType::kF32), 1e-4, 1e-5));
}

TEST(CrossEntropy, NonContiguousLogits) {
  Generator gen(44);
  const Tensor logits = randn({5, 4}, gen, 0.0, 1.0, DType::kF64).transpose(0, 1);  // [4, 5]
  ASSERT_FALSE(logits.is_contiguous());
  const Tensor targets = randint({4}, gen, 0, 5, DType::kI32);
  EXPECT_TRUE(allclose(cross_entropy(Variable(logits), targets, -100, 0.1).data(),
                       reference_loss(logits, targets, -100, 0.1, Reduction::kMean), 1e-12, 1e-12));
  EXPECT_TRUE(gradcheck(
      [&](const std::vector<Variable>& in) { return cross_entropy(in[0], targets, -100, 0.1); },
      {logits}));
}

// The f32 kernels use their own vectorised exp: over a vocabulary-sized row with a wide logit
// range (incl. values far below the max and -inf masks) they must follow the f64 path to f32
// accuracy, in the loss and in the gradient.
TEST(CrossEntropy, Float32FollowsFloat64OnWideRows) {
  const int64_t rows = 6, classes = 1000;
  // With label smoothing every class is a target, so a -inf logit would make the loss infinite
  // (as in PyTorch): masks are tested without smoothing.
  for (double smoothing : {0.0, 0.05}) {
    SCOPED_TRACE(smoothing);
    Generator gen(46);
    Tensor logits = randn({rows, classes}, gen, 0.0, 8.0, DType::kF64);
    logits.set({3, 10}, -120.0);  // e^(z - max) far below f32's smallest normal
    logits.set({4, 7}, 60.0);     // one dominant logit
    if (smoothing == 0.0) {
      logits.set({0, 5}, -std::numeric_limits<double>::infinity());  // masked logits
      logits.set({2, 999}, -std::numeric_limits<double>::infinity());
    }
    Tensor targets = randint({rows}, gen, 0, classes);
    targets.set({0}, 6);
    const Tensor expected = reference_loss(logits, targets, -100, smoothing, Reduction::kNone);
    Variable z64(logits, true);
    Variable z32(logits.to(DType::kF32), true);
    const Variable loss64 = cross_entropy(z64, targets, -100, smoothing, Reduction::kNone);
    const Variable loss32 = cross_entropy(z32, targets, -100, smoothing, Reduction::kNone);
    EXPECT_TRUE(allclose(loss64.data(), expected, 1e-12, 1e-12));
    EXPECT_TRUE(allclose(loss32.data(), expected.to(DType::kF32), 1e-5, 1e-5));
    const Tensor g = randn({rows}, gen, 0.0, 1.0, DType::kF64);
    loss64.backward(g);
    loss32.backward(g.to(DType::kF32));
    // Softmax entries are at most 1, so an absolute tolerance of a few f32 ulps of 1 applies.
    EXPECT_TRUE(allclose(z32.grad(), z64.grad().to(DType::kF32), 1e-5, 1e-7));
    if (smoothing == 0.0) {
      EXPECT_EQ(z64.grad().at({0, 5}), 0.0);              // exp(-inf) = 0 exactly in f64
      EXPECT_LT(std::abs(z32.grad().at({0, 5})), 1e-30);  // e^-87 at most in f32
    }
  }
}

// A NaN logit poisons its row's loss and gradient (divergence must be visible) and only it,
// wherever it sits in the row (vector body or remainder) and whatever its sign (the x86 default
// NaN, e.g. from inf - inf, is negative).
TEST(CrossEntropy, NanLogitPropagatesToItsRow) {
  const int64_t classes = 37;
  const std::vector<int64_t> nan_columns = {0, 1, 17, 35, 36};
  const int64_t rows = static_cast<int64_t>(nan_columns.size()) + 1;  // last row is clean
  for (DType dtype : {DType::kF32, DType::kF64}) {
    SCOPED_TRACE(dtype_name(dtype));
    Generator gen(47);
    Tensor logits = randn({rows, classes}, gen, 0.0, 1.0, dtype);
    for (size_t r = 0; r < nan_columns.size(); ++r) {
      const double nan = std::numeric_limits<double>::quiet_NaN();
      logits.set({static_cast<int64_t>(r), nan_columns[r]}, r % 2 ? nan : -nan);
    }
    Variable z(logits, true);
    const Tensor targets = full({rows}, 3, DType::kI64);
    const Variable loss = cross_entropy(z, targets, -100, 0.0, Reduction::kNone);
    loss.backward(ones({rows}, dtype));
    for (int64_t r = 0; r < rows; ++r) {
      const bool poisoned = r + 1 < rows;
      EXPECT_EQ(std::isnan(loss.data().at({r})), poisoned) << "row " << r;
      for (int64_t c = 0; c < classes; ++c) {
        ASSERT_EQ(std::isnan(z.grad().at({r, c})), poisoned) << "row " << r << " col " << c;
      }
    }
  }
}

// Every row ignored: mean is 0 / 0 = NaN like PyTorch, sum is 0, and no gradient flows.
TEST(CrossEntropy, AllRowsIgnored) {
  Generator gen(45);
  const Tensor logits = randn({3, 4}, gen, 0.0, 1.0, DType::kF64);
  const Tensor targets = full({3}, -100, DType::kI64);
  Variable z(logits, true);
  const Variable mean_loss = cross_entropy(z, targets);
  EXPECT_TRUE(std::isnan(mean_loss.item()));
  mean_loss.backward();
  EXPECT_TRUE(allclose(z.grad(), zeros({3, 4}, DType::kF64), 0, 0));
  EXPECT_EQ(cross_entropy(Variable(logits), targets, -100, 0.0, Reduction::kSum).item(), 0.0);
}

// Uniform logits with smoothing ε: every row's loss is log C whatever ε and the target are.
TEST(CrossEntropy, UniformLogitsGiveLogC) {
  const Tensor logits = zeros({2, 8}, DType::kF64);
  const Tensor targets = tensor_from({3, 5}, {2}, DType::kI64);
  EXPECT_NEAR(cross_entropy(Variable(logits), targets, -100, 0.3).item(), std::log(8.0), 1e-12);
}

using rota::testing::expect_error;

TEST(CrossEntropy, BadInputsAreErrors) {
  const Variable logits(zeros({3, 5}));
  expect_error(
      [&] {
        cross_entropy(logits, tensor_from({0, 7, 1}, {3}, DType::kI64));
      },
      "cross_entropy: target 7 at row 1 is out of range for 5 classes");
  expect_error(
      [&] {
        cross_entropy(logits, tensor_from({0, 1, -1}, {3}, DType::kI32));
      },
      "cross_entropy: target -1 at row 2 is out of range for 5 classes");
  expect_error([&] { cross_entropy(logits, zeros({4}, DType::kI64)); },
               "cross_entropy: logits [3,5] need targets [3], got [4]");
  expect_error([&] { cross_entropy(logits, zeros({3}, DType::kF32)); },
               "cross_entropy: targets dtype f32 is not an index type");
  expect_error([&] { cross_entropy(logits, zeros({3}, DType::kI64), -100, 1.5); },
               "cross_entropy: label_smoothing 1.5 is outside [0, 1]");
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
