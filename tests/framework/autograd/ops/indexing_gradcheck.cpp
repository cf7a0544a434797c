// Indexing ops: forward against plain loops, gradients against finite differences (repeated
// indices, broadcast masks, negative axes, non-contiguous inputs) and exact hand-built cases.
#include <functional>
#include <limits>
#include <string>

#include <gtest/gtest.h>

#include "framework/autograd/ops/indexing.h"
#include "framework/tensor/random.h"
#include "tests/support/allclose.h"
#include "tests/support/expect_error.h"
#include "tests/support/gradcheck.h"
#include "tests/support/index_math.h"
#include "tests/support/tensor_factory.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

using testing::allclose;
using testing::for_each_index;
using testing::gradcheck;
using testing::non_contiguous;
using testing::nonnegative_axis;
using testing::random_tensor;

Tensor random_index(const Shape& shape, int64_t n, uint64_t seed, DType dtype = DType::kI64) {
  Generator gen(seed);
  return randint(shape, gen, 0, n, dtype);
}

// ---- gather ----

struct GatherCase {
  std::string name;
  Shape x_shape;
  Shape index_shape;
  int64_t axis;
  int64_t index_range;  // indices drawn from [0, index_range): small ranges force repeats
};

std::vector<GatherCase> gather_cases() {
  return {
      {"vector", {5}, {9}, 0, 5},
      {"rows", {4, 5}, {4, 3}, 1, 5},
      {"negative_axis", {4, 5}, {4, 6}, -1, 2},
      {"axis0_smaller_index", {4, 5}, {7, 3}, 0, 4},
      {"middle_axis", {3, 4, 2}, {2, 6, 2}, 1, 3},
      {"heavy_repeats", {3, 4, 2}, {3, 8, 2}, -2, 1},
  };
}

class GatherTest : public ::testing::TestWithParam<GatherCase> {};

TEST_P(GatherTest, ForwardMatchesLoop) {
  const GatherCase& c = GetParam();
  const int64_t a = nonnegative_axis(c.axis, c.x_shape);
  const Tensor x = random_tensor(c.x_shape, 1);
  for (DType index_dtype : {DType::kI32, DType::kI64}) {
    const Tensor index = random_index(c.index_shape, c.index_range, 2, index_dtype);
    Tensor expected = zeros(c.index_shape, DType::kF64);
    for_each_index(c.index_shape, [&](const std::vector<int64_t>& i) {
      std::vector<int64_t> src = i;
      src[a] = static_cast<int64_t>(index.at(i));
      expected.set(i, x.at(src));
    });
    EXPECT_TRUE(allclose(gather(Variable(x), c.axis, index).data(), expected, 0, 0));
  }
}

TEST_P(GatherTest, GradientMatchesFiniteDifferences) {
  const GatherCase& c = GetParam();
  for (DType index_dtype : {DType::kI32, DType::kI64}) {
    const Tensor index = random_index(c.index_shape, c.index_range, 3, index_dtype);
    const auto f = [&](const std::vector<Variable>& in) { return gather(in[0], c.axis, index); };
    EXPECT_TRUE(gradcheck(f, {random_tensor(c.x_shape, 4)}));
    if (c.x_shape.size() > 1) {
      EXPECT_TRUE(gradcheck(f, {non_contiguous(c.x_shape, 5)}));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, GatherTest, ::testing::ValuesIn(gather_cases()),
                         [](const ::testing::TestParamInfo<GatherCase>& info) {
                           return info.param.name;
                         });

TEST(Gather, RepeatedIndicesAccumulateExactly) {
  Variable x(tensor_from({1, 2, 3, 4, 5, 6}, {2, 3}, DType::kF64), true);
  // Row 0 picks columns 0, 0, 2; row 1 picks 1, 1, 1.
  const Tensor index = tensor_from({0, 0, 2, 1, 1, 1}, {2, 3}, DType::kI32);
  const Variable y = gather(x, 1, index);
  EXPECT_TRUE(allclose(y.data(), tensor_from({1, 1, 3, 5, 5, 5}, {2, 3}, DType::kF64), 0, 0));
  y.backward(tensor_from({1, 10, 100, 1, 2, 4}, {2, 3}, DType::kF64));
  EXPECT_TRUE(allclose(x.grad(), tensor_from({11, 0, 100, 0, 7, 0}, {2, 3}, DType::kF64), 0, 0));
}

TEST(Gather, OutOfRangeIndexNamesOpValueAndSize) {
  const Variable x(zeros({2, 4}, DType::kF64), true);
  testing::expect_error(
      [&] {
        gather(x, -1, tensor_from({0, 4}, {2, 1}, DType::kI64));
      },
      "gather: index 4 is out of range for dim 1 of size 4");
}

// ---- index_select ----

struct SelectCase {
  std::string name;
  Shape x_shape;
  int64_t axis;
  std::vector<double> index;  // repeats on purpose
};

std::vector<SelectCase> select_cases() {
  return {
      {"vector", {5}, 0, {4, 0, 4, 4, 1}},  {"rows", {4, 3}, 0, {3, 3, 0, 1, 3}},
      {"columns", {4, 3}, 1, {2, 0, 2}},    {"negative_axis", {2, 4, 3}, -2, {1, 1, 3, 0, 1, 2}},
      {"last_axis", {2, 4, 3}, -1, {0, 0}}, {"empty_index", {2, 4, 3}, 1, {}},
  };
}

class IndexSelectTest : public ::testing::TestWithParam<SelectCase> {};

TEST_P(IndexSelectTest, ForwardMatchesLoop) {
  const SelectCase& c = GetParam();
  const int64_t a = nonnegative_axis(c.axis, c.x_shape);
  const int64_t count = static_cast<int64_t>(c.index.size());
  const Tensor x = random_tensor(c.x_shape, 6);
  Shape out_shape = c.x_shape;
  out_shape[a] = count;
  Tensor expected = zeros(out_shape, DType::kF64);
  for_each_index(out_shape, [&](const std::vector<int64_t>& i) {
    std::vector<int64_t> src = i;
    src[a] = static_cast<int64_t>(c.index[i[a]]);
    expected.set(i, x.at(src));
  });
  for (DType index_dtype : {DType::kI32, DType::kI64}) {
    const Tensor index = tensor_from(c.index, {count}, index_dtype);
    EXPECT_TRUE(allclose(index_select(Variable(x), c.axis, index).data(), expected, 0, 0));
  }
}

TEST_P(IndexSelectTest, GradientMatchesFiniteDifferences) {
  const SelectCase& c = GetParam();
  for (DType index_dtype : {DType::kI32, DType::kI64}) {
    const Tensor index = tensor_from(c.index, {static_cast<int64_t>(c.index.size())}, index_dtype);
    const auto f = [&](const std::vector<Variable>& in) {
      return index_select(in[0], c.axis, index);
    };
    if (c.index.empty()) {
      // Nothing selected: the output is empty and the gradient is all zeros.
      Variable x(random_tensor(c.x_shape, 7), true);
      const Variable y = index_select(x, c.axis, index);
      y.backward(zeros(y.shape(), DType::kF64));
      EXPECT_TRUE(allclose(x.grad(), zeros(c.x_shape, DType::kF64), 0, 0));
      continue;
    }
    EXPECT_TRUE(gradcheck(f, {random_tensor(c.x_shape, 7)}));
    if (c.x_shape.size() > 1) {
      EXPECT_TRUE(gradcheck(f, {non_contiguous(c.x_shape, 8)}));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, IndexSelectTest, ::testing::ValuesIn(select_cases()),
                         [](const ::testing::TestParamInfo<SelectCase>& info) {
                           return info.param.name;
                         });

TEST(IndexSelect, RepeatedRowsAccumulateExactly) {
  // An embedding lookup: rows 2, 0, 2, 2 of a [3, 2] table.
  Variable table(tensor_from({1, 2, 3, 4, 5, 6}, {3, 2}, DType::kF64), true);
  const Variable y = index_select(table, 0, tensor_from({2, 0, 2, 2}, {4}, DType::kI64));
  EXPECT_TRUE(allclose(y.data(), tensor_from({5, 6, 1, 2, 5, 6, 5, 6}, {4, 2}, DType::kF64), 0, 0));
  y.backward(tensor_from({1, 2, 3, 4, 10, 20, 100, 200}, {4, 2}, DType::kF64));
  EXPECT_TRUE(
      allclose(table.grad(), tensor_from({3, 4, 0, 0, 111, 222}, {3, 2}, DType::kF64), 0, 0));
  testing::expect_error([&] { index_select(table, 0, tensor_from({3}, {1}, DType::kI32)); },
                        "index_select: index 3 is out of range for dim 0 of size 3");
}

// ---- masked_fill ----

TEST(MaskedFill, ForwardAndGradientWithBroadcastMask) {
  const Shape x_shape = {3, 4, 2};
  for (const Shape& mask_shape : std::vector<Shape>{{3, 4, 2}, {4, 1}, {3, 1, 2}, {2}}) {
    for (DType mask_dtype : {DType::kI64, DType::kF32, DType::kBF16}) {
      const Tensor mask = random_index(mask_shape, 2, 9).to(mask_dtype);
      const Tensor x = random_tensor(x_shape, 10);
      const Tensor me = mask.expand(x_shape);
      Tensor expected = zeros(x_shape, DType::kF64);
      for_each_index(x_shape, [&](const std::vector<int64_t>& i) {
        expected.set(i, me.at(i) != 0 ? -1e9 : x.at(i));
      });
      EXPECT_TRUE(allclose(masked_fill(Variable(x), mask, -1e9).data(), expected, 0, 0));
      const auto f = [&](const std::vector<Variable>& in) {
        return masked_fill(in[0], mask, -3.0);
      };
      EXPECT_TRUE(gradcheck(f, {x})) << shape_str(mask_shape);
      EXPECT_TRUE(gradcheck(f, {non_contiguous(x_shape, 11)})) << shape_str(mask_shape);
    }
  }
}

TEST(MaskedFill, GradientIsZeroWhereFilled) {
  Variable x(random_tensor({2, 3}, 12), true);
  const Tensor mask = tensor_from({1, 0, 1}, {3}, DType::kI32);
  const Variable y = masked_fill(x, mask, -std::numeric_limits<double>::infinity());
  EXPECT_EQ(y.data().at({1, 0}), -std::numeric_limits<double>::infinity());
  EXPECT_EQ(y.data().at({1, 1}), x.data().at({1, 1}));
  y.backward(full({2, 3}, 5.0, DType::kF64));
  EXPECT_TRUE(allclose(x.grad(), tensor_from({0, 5, 0, 0, 5, 0}, {2, 3}, DType::kF64), 0, 0));
}

// ---- where ----

TEST(Where, ForwardAndGradientsWithThreeWayBroadcast) {
  struct Case {
    Shape cond, a, b;
  };
  for (const Case& c : std::vector<Case>{{{3, 4}, {3, 4}, {3, 4}},
                                         {{3, 1}, {4}, {3, 4}},
                                         {{2, 1, 4}, {3, 1}, {}},
                                         {{4}, {2, 3, 1}, {2, 1, 4}}}) {
    const Tensor cond = random_index(c.cond, 2, 13).to(DType::kF32);
    const Tensor a = random_tensor(c.a, 14);
    const Tensor b = random_tensor(c.b, 15);
    const Shape shape = broadcast_shapes(broadcast_shapes(c.cond, c.a, "t"), c.b, "t");
    const Tensor ce = cond.expand(shape);
    const Tensor ae = a.expand(shape);
    const Tensor be = b.expand(shape);
    Tensor expected = zeros(shape, DType::kF64);
    for_each_index(shape, [&](const std::vector<int64_t>& i) {
      expected.set(i, ce.at(i) != 0 ? ae.at(i) : be.at(i));
    });
    EXPECT_TRUE(allclose(where(cond, Variable(a), Variable(b)).data(), expected, 0, 0));
    const auto f = [&](const std::vector<Variable>& in) { return where(cond, in[0], in[1]); };
    EXPECT_TRUE(gradcheck(f, {a, b})) << shape_str(c.cond) << shape_str(c.a) << shape_str(c.b);
  }
  // Non-contiguous operands.
  const Tensor cond = random_index({3, 4}, 2, 16);
  const auto f = [&](const std::vector<Variable>& in) { return where(cond, in[0], in[1]); };
  EXPECT_TRUE(
      gradcheck(f, {random_tensor({4, 3}, 17).transpose(0, 1), non_contiguous({3, 4}, 18)}));
}

TEST(Where, GradientsSplitExactly) {
  Variable a(tensor_from({1, 2, 3}, {3}, DType::kF64), true);
  Variable b(tensor_from({7}, {1}, DType::kF64), true);  // broadcast to [2, 3]
  const Tensor cond = tensor_from({1, 0, 1, 0, 0, 1}, {2, 3}, DType::kI64);
  const Variable y = where(cond, a, b);
  EXPECT_TRUE(allclose(y.data(), tensor_from({1, 7, 3, 7, 7, 3}, {2, 3}, DType::kF64), 0, 0));
  y.backward(tensor_from({1, 2, 4, 8, 16, 32}, {2, 3}, DType::kF64));
  EXPECT_TRUE(allclose(a.grad(), tensor_from({1, 0, 36}, {3}, DType::kF64), 0, 0));
  EXPECT_TRUE(allclose(b.grad(), tensor_from({26}, {1}, DType::kF64), 0, 0));
  // Only b needs a gradient: a gets none.
  Variable c(tensor_from({1, 2, 3}, {3}, DType::kF64), false);
  Variable d(tensor_from({7}, {1}, DType::kF64), true);
  where(cond, c, d).backward(ones({2, 3}, DType::kF64));
  EXPECT_FALSE(c.grad().defined());
  EXPECT_TRUE(allclose(d.grad(), tensor_from({3}, {1}, DType::kF64), 0, 0));
}

// ---- tril / triu ----

TEST(Triangle, ForwardAndGradientBatchedNonSquare) {
  for (const Shape& shape : std::vector<Shape>{{4, 4}, {3, 5}, {2, 5, 3}, {2, 2, 3, 4}}) {
    for (int64_t k : {-2, -1, 0, 1, 3}) {
      const Tensor x = random_tensor(shape, 19);
      Tensor lower = zeros(shape, DType::kF64);
      Tensor upper = zeros(shape, DType::kF64);
      for_each_index(shape, [&](const std::vector<int64_t>& i) {
        const int64_t diff = i[i.size() - 1] - i[i.size() - 2];
        lower.set(i, diff <= k ? x.at(i) : 0.0);
        upper.set(i, diff >= k ? x.at(i) : 0.0);
      });
      EXPECT_TRUE(allclose(tril(Variable(x), k).data(), lower, 0, 0));
      EXPECT_TRUE(allclose(triu(Variable(x), k).data(), upper, 0, 0));
      const auto lo = [&](const std::vector<Variable>& in) { return tril(in[0], k); };
      const auto up = [&](const std::vector<Variable>& in) { return triu(in[0], k); };
      EXPECT_TRUE(gradcheck(lo, {x})) << shape_str(shape) << " k " << k;
      EXPECT_TRUE(gradcheck(up, {non_contiguous(shape, 20)})) << shape_str(shape) << " k " << k;
    }
  }
}

TEST(Triangle, GradientIsTheKeptTriangle) {
  Variable x(random_tensor({2, 3}, 21), true);
  tril(x, -1).backward(ones({2, 3}, DType::kF64));
  EXPECT_TRUE(allclose(x.grad(), tensor_from({0, 0, 0, 1, 0, 0}, {2, 3}, DType::kF64), 0, 0));
}

TEST(IndexingOps, NoGraphWhenNothingNeedsGrad) {
  const Variable x(random_tensor({3, 3}, 22));
  const Tensor index = tensor_from({0, 2}, {2}, DType::kI64);
  EXPECT_FALSE(gather(x, 0, zeros({1, 3}, DType::kI64)).requires_grad());
  EXPECT_FALSE(index_select(x, 0, index).requires_grad());
  EXPECT_FALSE(masked_fill(x, zeros({3}), 0).requires_grad());
  EXPECT_FALSE(where(zeros({3}), x, x).requires_grad());
  EXPECT_FALSE(tril(x).requires_grad());
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
