// Reduction kernels, softmax family and cumsum: forward against plain double loops.
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "framework/backend/primitives/reduce.h"
#include "framework/tensor/random.h"
#include "tests/support/allclose.h"
#include "tests/support/expect_error.h"
#include "tests/support/reduce_cases.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

using testing::allclose;
using testing::AxisCase;
using testing::case_name;
using testing::CaseName;
using testing::expect_error;
using testing::ReduceCase;
using testing::with_and_without_keepdim;
constexpr double kInf = std::numeric_limits<double>::infinity();

// ---- reference helpers (plain loops in double, independent of the kernels) ----

// Advances a row-major multi-index; false after the last one.
bool next_index(std::vector<int64_t>& index, const Shape& shape) {
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    if (++index[d] < shape[d]) return true;
    index[d] = 0;
  }
  return false;
}

std::vector<bool> reduced_mask(const Shape& shape, const std::vector<int64_t>& axes) {
  const int64_t nd = static_cast<int64_t>(shape.size());
  std::vector<bool> mask(nd, axes.empty());
  for (int64_t a : axes) mask[a < 0 ? a + nd : a] = true;
  return mask;
}

using Reducer = std::function<double(const std::vector<double>&)>;

// Groups the elements of x by output index (reduced coordinates dropped) and applies fn.
Tensor reference_reduce(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim,
                        const Reducer& fn) {
  const Shape& shape = x.shape();
  const std::vector<bool> mask = reduced_mask(shape, axes);
  Shape out_shape;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (!mask[d]) out_shape.push_back(shape[d]);
    if (mask[d] && keepdim) out_shape.push_back(1);
  }
  std::vector<std::vector<double>> groups(shape_numel(out_shape));
  const std::vector<double> values = x.to_double_vector();  // row-major
  std::vector<int64_t> index(shape.size(), 0);
  for (double v : values) {
    int64_t flat = 0;
    for (size_t d = 0; d < shape.size(); ++d) {
      if (!mask[d]) flat = flat * shape[d] + index[d];
    }
    groups[flat].push_back(v);
    next_index(index, shape);
  }
  std::vector<double> out;
  for (const auto& g : groups) out.push_back(fn(g));
  return tensor_from(out, out_shape, DType::kF64);
}

double ref_sum(const std::vector<double>& v) {
  double s = 0;
  for (double e : v) s += e;
  return s;
}
double ref_mean(const std::vector<double>& v) {
  return ref_sum(v) / v.size();
}
double ref_max(const std::vector<double>& v) {
  double m = -kInf;
  for (double e : v) {
    if (std::isnan(e)) return e;
    m = std::max(m, e);
  }
  return m;
}
double ref_logsumexp(const std::vector<double>& v) {
  const double m = ref_max(v);
  if (std::isinf(m)) return m;
  double s = 0;
  for (double e : v) s += std::exp(e - m);
  return m + std::log(s);
}

// Applies fn to every line of x along `axis` (other coordinates fixed), writing a line back.
using LineFn = std::function<std::vector<double>(const std::vector<double>&)>;
Tensor reference_along(const Tensor& x, int64_t axis, const LineFn& fn) {
  const Shape& shape = x.shape();
  const int64_t a = axis < 0 ? axis + x.dim() : axis;
  const std::vector<double> values = x.to_double_vector();  // row-major
  std::vector<double> out(values.size());
  // Row-major: element (before, i, after) sits at (before * n + i) * after_size + after.
  int64_t before_size = 1;
  int64_t after_size = 1;
  for (int64_t d = 0; d < a; ++d) before_size *= shape[d];
  for (int64_t d = a + 1; d < x.dim(); ++d) after_size *= shape[d];
  const int64_t n = shape[a];
  for (int64_t before = 0; before < before_size; ++before) {
    for (int64_t after = 0; after < after_size; ++after) {
      std::vector<double> line;
      for (int64_t i = 0; i < n; ++i) line.push_back(values[(before * n + i) * after_size + after]);
      const std::vector<double> result = fn(line);
      for (int64_t i = 0; i < n; ++i) out[(before * n + i) * after_size + after] = result[i];
    }
  }
  return tensor_from(out, shape, DType::kF64);
}

std::vector<double> ref_softmax(const std::vector<double>& v) {
  double m = -kInf;
  for (double e : v) m = std::max(m, e);
  double s = 0;
  for (double e : v) s += std::exp(e - m);
  std::vector<double> out;
  for (double e : v) out.push_back(std::exp(e - m) / s);
  return out;
}
// (e - m) - log(s): e - (m + log(s)) would lose the low bits of log(s) when m is large.
std::vector<double> ref_log_softmax(const std::vector<double>& v) {
  double m = -kInf;
  for (double e : v) m = std::max(m, e);
  double s = 0;
  for (double e : v) s += std::exp(e - m);
  std::vector<double> out;
  for (double e : v) out.push_back((e - m) - std::log(s));
  return out;
}

// A non-contiguous view with the given shape and random values: every other element of a
// tensor twice as long in dim 0, transposed twice so the strides are not row-major either.
Tensor strided_randn(const Shape& shape, Generator& gen) {
  if (shape.empty()) return randn(shape, gen, 0.0, 1.0, DType::kF64);
  Shape base_shape = shape;
  base_shape[0] *= 2;
  const Tensor base = randn(base_shape, gen, 0.0, 1.0, DType::kF64);
  return base.slice(0, 0, base_shape[0], 2);
}

// ---- reductions ----

struct ReduceOp {
  std::string name;
  std::function<Tensor(const Tensor&, const std::vector<int64_t>&, bool)> kernel;
  Reducer reference;
};

std::vector<ReduceOp> reduce_ops() {
  return {
      {"sum", backend::reduce_sum, ref_sum},
      {"mean", backend::reduce_mean, ref_mean},
      {"max", backend::reduce_max, ref_max},
      {"logsumexp", backend::logsumexp, ref_logsumexp},
  };
}

std::vector<ReduceCase> reduce_cases() {
  return with_and_without_keepdim({
      {{7}, {0}},
      {{2, 3, 4}, {}},          // all axes
      {{2, 3, 4}, {0}},         // leading: column kernel
      {{2, 3, 4}, {1}},         // middle: column kernel with outer > 1
      {{2, 3, 4}, {-1}},        // last: row kernel
      {{2, 3, 4}, {0, 2}},      // scattered: moved last
      {{2, 3, 4}, {2, 0}},      // unsorted
      {{2, 3, 4, 5}, {1, 2}},   // adjacent pair in the middle
      {{2, 3, 4, 5}, {-3, 3}},  // scattered with a negative axis
      {{3, 1, 4}, {1}},         // size-1 axis: a copy
      {{3, 1, 4}, {0, 2}},      // adjacent once the size-1 dim is ignored
      {{}, {}},                 // 0-d
      {{300, 300}, {0}},        // several column blocks, threaded
      {{5, 20, 330}, {1}},      // column blocks with a partial last block
      {{120, 400}, {1}},        // long rows, threaded
      {{40, 30, 50}, {0, 2}},   // scattered, threaded after the move
  });
}

class ReduceTest : public ::testing::TestWithParam<std::tuple<ReduceOp, ReduceCase>> {};

TEST_P(ReduceTest, MatchesDoubleLoop) {
  const auto& [op, c] = GetParam();
  Generator gen(17);
  for (const bool strided : {false, true}) {
    SCOPED_TRACE(strided ? "non-contiguous input" : "contiguous input");
    const Tensor x =
        strided ? strided_randn(c.shape, gen) : randn(c.shape, gen, 0.0, 1.0, DType::kF64);
    ASSERT_EQ(x.shape(), c.shape);
    const Tensor expected = reference_reduce(x, c.axes, c.keepdim, op.reference);
    const Tensor y = op.kernel(x, c.axes, c.keepdim);
    EXPECT_EQ(y.dtype(), DType::kF64);
    EXPECT_TRUE(y.is_contiguous());
    EXPECT_TRUE(allclose(y, expected, 1e-12, 1e-12));
    // f32 agrees with the double result to float precision.
    const Tensor y32 = op.kernel(x.to(DType::kF32), c.axes, c.keepdim);
    EXPECT_EQ(y32.dtype(), DType::kF32);
    EXPECT_TRUE(allclose(y32, expected, 1e-5, 1e-5));
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, ReduceTest,
                         ::testing::Combine(::testing::ValuesIn(reduce_ops()),
                                            ::testing::ValuesIn(reduce_cases())),
                         CaseName());

TEST(Reduce, SumOfOneElementReductionIsACopy) {
  const Tensor x = tensor_from({1, 2, 3}, {3, 1}, DType::kF64);
  EXPECT_TRUE(
      allclose(backend::reduce_sum(x, {1}, false), tensor_from({1, 2, 3}, {3}).to(DType::kF64)));
}

TEST(Reduce, LongFloatSumsDoNotDrift) {
  // 2^20 terms of 0.1f, as one row and as columns: a plain float running sum is off by
  // ~1e-4 relative here; chunked partial sums added in double stay at float rounding.
  const int64_t n = int64_t{1} << 20;
  const double exact = static_cast<double>(0.1f) * static_cast<double>(n);
  const Tensor row = full({n}, 0.1, DType::kF32);
  EXPECT_NEAR(backend::reduce_sum(row, {}, false).item(), exact, 1e-6 * exact);
  EXPECT_NEAR(backend::reduce_mean(row, {0}, false).item(), exact / n, 1e-6 * exact / n);
  const Tensor columns = full({n / 4, 4}, 0.1, DType::kF32);
  for (double v : backend::reduce_sum(columns, {0}, false).to_double_vector()) {
    EXPECT_NEAR(v, exact / 4, 1e-6 * exact / 4);
  }
}

TEST(Reduce, EmptyInputs) {
  const Tensor x = zeros({0, 3}, DType::kF64);
  EXPECT_TRUE(allclose(backend::reduce_sum(x, {0}, false), zeros({3}, DType::kF64)));
  const Tensor m = backend::reduce_mean(x, {0}, false);
  for (double v : m.to_double_vector()) EXPECT_TRUE(std::isnan(v));
  EXPECT_EQ(backend::reduce_max(x, {1}, false).shape(), Shape({0}));
  EXPECT_TRUE(allclose(backend::logsumexp(x, {0}, true), full({1, 3}, -kInf, DType::kF64)));
}

TEST(Reduce, MaxPropagatesNaN) {
  const double nan = std::nan("");
  // NaN in the first, middle and last place of a row, and in a column reduction.
  const Tensor x = tensor_from({nan, 1, 2, 1, nan, 2, 1, 2, nan, 1, 2, 3}, {4, 3}, DType::kF64);
  for (double v : backend::reduce_max(x, {1}, false).slice(0, 0, 3).to_double_vector()) {
    EXPECT_TRUE(std::isnan(v));
  }
  EXPECT_EQ(backend::reduce_max(x, {1}, false).at({3}), 3.0);
  for (double v : backend::reduce_max(x, {0}, false).to_double_vector()) EXPECT_TRUE(std::isnan(v));
  EXPECT_TRUE(std::isnan(backend::logsumexp(x, {1}, false).at({0})));
}

TEST(Reduce, LogSumExpOfAllMinusInfinityIsMinusInfinity) {
  for (DType dtype : {DType::kF32, DType::kF64}) {
    const Tensor x = tensor_from({-kInf, -kInf, -kInf, 0.5, -kInf, 1.5}, {2, 3}, dtype);
    const Tensor y = backend::logsumexp(x, {1}, false);
    EXPECT_EQ(y.at({0}), -kInf);
    EXPECT_NEAR(y.at({1}), std::log(std::exp(0.5) + std::exp(1.5)), 1e-6);
    // Along columns (moved last) as well.
    EXPECT_EQ(backend::logsumexp(x.slice(1, 1, 2), {0}, false).at({0}), -kInf);
  }
}

TEST(Reduce, LogSumExpOfLargeValuesStaysFinite) {
  const Tensor x = tensor_from({1000, 1000, 999, -1000}, {4}, DType::kF32);
  const double expected = 1000 + std::log(2 + std::exp(-1.0) + std::exp(-2000.0));
  EXPECT_NEAR(backend::logsumexp(x, {}, false).item(), expected, 1e-3);
}

// The f32 kernels use their own vectorised exp; logsumexp_backward with y = 0 and
// grad_y = 1 returns exactly exp(x), so it exposes that exp for a dense sweep.
TEST(Reduce, Float32ExpMatchesExactExpToFloatPrecision) {
  std::vector<double> xs;
  // The floats just inside [ln(FLT_MIN), ln(FLT_MAX)], so every exp is a normal float.
  const double lo =
      std::nextafter(static_cast<float>(std::log(std::numeric_limits<float>::min())), 0.0f);
  const double hi =
      std::nextafter(static_cast<float>(std::log(std::numeric_limits<float>::max())), 0.0f);
  for (int64_t i = 0; i <= 300000; ++i) {
    xs.push_back(static_cast<float>(lo + (hi - lo) * static_cast<double>(i) / 300000));
  }
  const int64_t n = static_cast<int64_t>(xs.size());
  const Tensor e = backend::logsumexp_backward(tensor_from(xs, {n}), scalar_tensor(0.0),
                                               scalar_tensor(1.0), {0}, false);
  std::vector<double> expected;
  for (double x : xs) expected.push_back(std::exp(x));
  // One float ulp is at most 2^-23 = 1.19e-7 relative; the result is also rounded to float.
  EXPECT_TRUE(allclose(e, tensor_from(expected, {n}, DType::kF64), 1.8e-7, 0));
  // Outside the range: 0 below, inf above; NaN stays NaN.
  const Tensor special =
      backend::logsumexp_backward(tensor_from({-kInf, -200, -88, 89, 200, kInf, std::nan("")}, {7}),
                                  scalar_tensor(0.0), scalar_tensor(1.0), {0}, false);
  const std::vector<double> v = special.to_double_vector();
  EXPECT_EQ(v[0], 0.0);
  EXPECT_EQ(v[1], 0.0);
  EXPECT_EQ(v[2], 0.0);  // exp(-88) is a float denormal: flushed, as FTZ would anyway
  EXPECT_EQ(v[3], kInf);
  EXPECT_EQ(v[4], kInf);
  EXPECT_EQ(v[5], kInf);
  EXPECT_TRUE(std::isnan(v[6]));
}

TEST(Reduce, ErrorsNameTheOpAndTheShape) {
  const Tensor x = zeros({2, 3}, DType::kF64);
  expect_error([&] { backend::reduce_sum(x, {2}, false); },
               "sum: axis 2 out of range for shape [2,3]");
  expect_error([&] { backend::reduce_mean(x, {-3}, false); },
               "mean: axis -3 out of range for shape [2,3]");
  expect_error(
      [&] {
        backend::reduce_max(x, {1, -1}, false);
      },
      "max: repeated axis in [1,-1] for shape [2,3]");
  expect_error(
      [&] {
        backend::reduce_max(zeros({2, 0}), {1}, false);
      },
      "max: cannot take the max of an empty set (axes [1] of shape [2,0])");
  expect_error([&] { backend::logsumexp(zeros({2}, DType::kI32), {}, false); },
               "logsumexp: dtype i32 of shape [2] is not supported");
  expect_error([&] { backend::softmax(x, 2); }, "softmax: axis 2 out of range for shape [2,3]");
  expect_error([&] { backend::log_softmax(scalar_tensor(1.0), 0); },
               "log_softmax: axis 0 out of range for shape []");
  expect_error([&] { backend::cumsum(x, -3); }, "cumsum: axis -3 out of range for shape [2,3]");
  expect_error(
      [&] {
        backend::softmax_backward(x, zeros({3, 2}, DType::kF64), 0);
      },
      "softmax_backward: y f64 [2,3] and grad_y f64 [3,2] differ");
}

// ---- expand_reduced (the sum / mean backward) ----

class ExpandReducedTest : public ::testing::TestWithParam<ReduceCase> {};

TEST_P(ExpandReducedTest, BroadcastsTheGradientBack) {
  const ReduceCase& c = GetParam();
  Generator gen(23);
  // Shape of grad: reduce a dummy of the input shape.
  const Shape grad_shape =
      reference_reduce(zeros(c.shape, DType::kF64), c.axes, c.keepdim, ref_sum).shape();
  const Tensor g = randn(grad_shape, gen, 0.0, 1.0, DType::kF64);
  const Tensor out = backend::expand_reduced(g, c.shape, c.axes, c.keepdim, 0.5);
  // out[index] = 0.5 * g[index with the reduced coordinates dropped (or 0 when kept)].
  const std::vector<bool> mask = reduced_mask(c.shape, c.axes);
  std::vector<double> expected;
  std::vector<int64_t> index(c.shape.size(), 0);
  do {
    std::vector<int64_t> gi;
    for (size_t d = 0; d < c.shape.size(); ++d) {
      if (!mask[d]) gi.push_back(index[d]);
      if (mask[d] && c.keepdim) gi.push_back(0);
    }
    expected.push_back(0.5 * g.at(gi));
  } while (!c.shape.empty() && next_index(index, c.shape));
  EXPECT_TRUE(allclose(out, tensor_from(expected, c.shape, DType::kF64), 1e-15, 0));
}

INSTANTIATE_TEST_SUITE_P(Layouts, ExpandReducedTest, ::testing::ValuesIn(reduce_cases()),
                         CaseName());

// ---- softmax / log_softmax ----

std::vector<AxisCase> axis_cases() {
  return {
      {{7}, 0},        {{2, 3, 4}, 0}, {{2, 3, 4}, 1},  {{2, 3, 4}, 2}, {{2, 3, 4}, -1},
      {{2, 3, 4}, -3}, {{3, 1, 5}, 1}, {{64, 700}, -1}, {{700, 64}, 0}, {{3, 200, 7}, 1},
  };
}

struct LineOp {
  std::string name;
  std::function<Tensor(const Tensor&, int64_t)> kernel;
  LineFn reference;
};

std::vector<LineOp> softmax_ops() {
  return {
      {"softmax", backend::softmax, ref_softmax},
      {"log_softmax", backend::log_softmax, ref_log_softmax},
  };
}

class SoftmaxTest : public ::testing::TestWithParam<std::tuple<LineOp, AxisCase>> {};

TEST_P(SoftmaxTest, MatchesDoubleLoop) {
  const auto& [op, c] = GetParam();
  Generator gen(29);
  for (const bool strided : {false, true}) {
    SCOPED_TRACE(strided ? "non-contiguous input" : "contiguous input");
    const Tensor x =
        strided ? strided_randn(c.shape, gen) : randn(c.shape, gen, 0.0, 2.0, DType::kF64);
    const Tensor expected = reference_along(x, c.axis, op.reference);
    const Tensor y = op.kernel(x, c.axis);
    EXPECT_TRUE(y.is_contiguous());
    EXPECT_TRUE(allclose(y, expected, 1e-12, 1e-14));
    const Tensor y32 = op.kernel(x.to(DType::kF32), c.axis);
    EXPECT_EQ(y32.dtype(), DType::kF32);
    EXPECT_TRUE(allclose(y32, expected, 2e-5, 1e-7));
  }
}

TEST_P(SoftmaxTest, LargeInputsStayFinite) {
  const auto& [op, c] = GetParam();
  Generator gen(31);
  for (DType dtype : {DType::kF32, DType::kF64}) {
    SCOPED_TRACE(dtype_name(dtype));
    // Values around +1000 (exp overflows without the max subtraction) and one row with -1000.
    Tensor x = randn(c.shape, gen, 1000.0, 3.0, DType::kF64);
    if (x.numel() > 1) x.set(std::vector<int64_t>(c.shape.size(), 0), -1000.0);
    const Tensor expected = reference_along(x, c.axis, op.reference);
    const Tensor y = op.kernel(x.to(dtype), c.axis);
    for (double v : y.to_double_vector()) ASSERT_TRUE(std::isfinite(v)) << y.to_string();
    // f32 inputs near 1000 are themselves rounded by ~3e-5, so compare against the reference
    // computed from the rounded values.
    const Tensor rounded = reference_along(x.to(dtype), c.axis, op.reference);
    EXPECT_TRUE(allclose(y, rounded, 1e-5, 1e-7));
    if (dtype == DType::kF64) {
      EXPECT_TRUE(allclose(y, expected, 1e-10, 1e-14));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, SoftmaxTest,
                         ::testing::Combine(::testing::ValuesIn(softmax_ops()),
                                            ::testing::ValuesIn(axis_cases())),
                         CaseName());

TEST(Softmax, RowWithMinusInfinityGivesZeroProbability) {
  const Tensor x = tensor_from({0.0, -kInf, 0.0}, {3}, DType::kF64);
  EXPECT_TRUE(allclose(backend::softmax(x, 0), tensor_from({0.5, 0, 0.5}, {3}, DType::kF64)));
  EXPECT_EQ(backend::log_softmax(x, 0).at({1}), -kInf);
}

// Backward kernels against their formulas written as plain loops.
class SoftmaxBackwardTest : public ::testing::TestWithParam<AxisCase> {};

TEST_P(SoftmaxBackwardTest, MatchesDoubleLoop) {
  const AxisCase& c = GetParam();
  Generator gen(37);
  const Tensor x = randn(c.shape, gen, 0.0, 1.0, DType::kF64);
  const Tensor g = strided_randn(c.shape, gen);
  const int64_t a = c.axis < 0 ? c.axis + x.dim() : c.axis;
  const Tensor y = backend::softmax(x, c.axis);
  const Tensor ly = backend::log_softmax(x, c.axis);
  Tensor expected_soft = zeros(c.shape, DType::kF64);
  Tensor expected_log = zeros(c.shape, DType::kF64);
  Shape outer_shape = c.shape;
  outer_shape[a] = 1;
  std::vector<int64_t> index(c.shape.size(), 0);
  do {
    std::vector<int64_t> at = index;
    double dot = 0;
    double gsum = 0;
    for (int64_t i = 0; i < c.shape[a]; ++i) {
      at[a] = i;
      dot += g.at(at) * y.at(at);
      gsum += g.at(at);
    }
    for (int64_t i = 0; i < c.shape[a]; ++i) {
      at[a] = i;
      expected_soft.set(at, y.at(at) * (g.at(at) - dot));
      expected_log.set(at, g.at(at) - std::exp(ly.at(at)) * gsum);
    }
  } while (next_index(index, outer_shape));
  EXPECT_TRUE(allclose(backend::softmax_backward(y, g, c.axis), expected_soft, 1e-12, 1e-14));
  EXPECT_TRUE(allclose(backend::log_softmax_backward(ly, g, c.axis), expected_log, 1e-12, 1e-14));
}

INSTANTIATE_TEST_SUITE_P(Shapes, SoftmaxBackwardTest, ::testing::ValuesIn(axis_cases()),
                         CaseName());

// ---- cumsum ----

struct CumsumCase {
  AxisCase where;
  bool exclusive;
  bool reverse;
};

std::vector<CumsumCase> cumsum_cases() {
  std::vector<CumsumCase> cases;
  const std::vector<AxisCase> wheres = {
      {{7}, 0},       {{2, 3, 4}, 0},    {{2, 3, 4}, 1}, {{2, 3, 4}, -1},
      {{3, 1, 5}, 1}, {{3, 50, 300}, 1}, {{80, 600}, 1},
  };
  for (const AxisCase& w : wheres) {
    for (bool exclusive : {false, true}) {
      for (bool reverse : {false, true}) cases.push_back({w, exclusive, reverse});
    }
  }
  return cases;
}

std::vector<double> ref_scan(const std::vector<double>& v, bool exclusive, bool reverse) {
  const int64_t n = static_cast<int64_t>(v.size());
  std::vector<double> out(n);
  for (int64_t i = 0; i < n; ++i) {
    double s = 0;
    for (int64_t j = 0; j < n; ++j) {
      const bool before = reverse ? j > i : j < i;
      if (before || (!exclusive && j == i)) s += v[j];
    }
    out[i] = s;
  }
  return out;
}

class CumsumTest : public ::testing::TestWithParam<CumsumCase> {};

TEST_P(CumsumTest, MatchesDoubleLoop) {
  const CumsumCase& c = GetParam();
  Generator gen(41);
  for (const bool strided : {false, true}) {
    SCOPED_TRACE(strided ? "non-contiguous input" : "contiguous input");
    const Tensor x = strided ? strided_randn(c.where.shape, gen)
                             : randn(c.where.shape, gen, 0.0, 1.0, DType::kF64);
    const Tensor expected = reference_along(x, c.where.axis, [&](const std::vector<double>& v) {
      return ref_scan(v, c.exclusive, c.reverse);
    });
    const Tensor y = backend::cumsum(x, c.where.axis, c.exclusive, c.reverse);
    EXPECT_TRUE(allclose(y, expected, 1e-12, 1e-12));
    const Tensor y32 = backend::cumsum(x.to(DType::kF32), c.where.axis, c.exclusive, c.reverse);
    EXPECT_TRUE(allclose(y32, expected, 1e-5, 1e-5));
  }
}

INSTANTIATE_TEST_SUITE_P(Layouts, CumsumTest, ::testing::ValuesIn(cumsum_cases()),
                         [](const ::testing::TestParamInfo<CumsumCase>& info) {
                           const CumsumCase& c = info.param;
                           return case_name(c.where) + (c.exclusive ? "_exclusive" : "") +
                                  (c.reverse ? "_reverse" : "");
                         });

TEST(Cumsum, LongFloatScanDoesNotDrift) {
  // 2e5 terms of 0.1f: a float running sum is off by ~1e-3 relative here; the double
  // accumulator stays within float rounding of the exact prefix sums.
  const int64_t n = 200000;
  const Tensor x = full({n}, 0.1, DType::kF32);
  const double step = static_cast<double>(0.1f);
  const Tensor y = backend::cumsum(x, 0);
  const std::vector<double> v = y.to_double_vector();
  for (int64_t i : {int64_t{0}, n / 2, n - 1}) {
    EXPECT_NEAR(v[i], step * (i + 1), 1e-7 * step * (i + 1)) << "at " << i;
  }
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
