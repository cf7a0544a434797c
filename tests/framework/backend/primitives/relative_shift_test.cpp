// Relative shift kernels: skew = index formula = pad-reshape rel_shift = gather, the adjoint
// identity, bucket column maps, the legacy causal-only shift, errors.
#include <algorithm>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "framework/backend/primitives/indexing.h"
#include "framework/backend/primitives/relative_shift.h"
#include "framework/tensor/random.h"
#include "tests/support/allclose.h"
#include "tests/support/expect_error.h"
#include "tests/support/tensor_factory.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

using testing::allclose;
using testing::expect_error;
using testing::random_tensor;

struct ShiftCase {
  std::string name;
  Shape lead;  // leading dims [...]
  int64_t n_q;
  int64_t n_k;
  int64_t extra;  // columns beyond n_q + n_k − 1
};

std::vector<ShiftCase> shift_cases() {
  return {
      {"self_square", {2, 3}, 5, 5, 0},    {"cross_more_keys", {2}, 3, 7, 0},
      {"cross_more_queries", {}, 6, 2, 0}, {"extra_columns", {2, 2}, 4, 5, 3},
      {"single_query", {3}, 1, 6, 0},      {"single_key", {3}, 5, 1, 1},
      {"one_by_one", {}, 1, 1, 0},         {"odd_lengths", {1, 3}, 7, 9, 2},
  };
}

Shape with_tail(Shape lead, int64_t a, int64_t b) {
  lead.push_back(a);
  lead.push_back(b);
  return lead;
}

// The skew by its definition, in double: s[g, i, j] = x[g, i, c(j − i + n_q − 1)].
Tensor skew_loop(const Tensor& x, int64_t n_k, const std::vector<int64_t>& map = {}) {
  const int64_t n_q = x.size(-2);
  const int64_t n_x = x.size(-1);
  const std::vector<double> xv = x.to_double_vector();
  const int64_t groups = n_q * n_x == 0 ? 0 : x.numel() / (n_q * n_x);
  Shape shape = x.shape();
  shape.back() = n_k;
  std::vector<double> s(groups * n_q * n_k);
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t i = 0; i < n_q; ++i)
      for (int64_t j = 0; j < n_k; ++j) {
        const int64_t r = j - i + n_q - 1;
        const int64_t col = map.empty() ? r : map[r];
        s[(g * n_q + i) * n_k + j] = xv[(g * n_q + i) * n_x + col];
      }
  return tensor_from(s, shape, DType::kF64);
}

// Σ a·b over all elements, in double.
double inner(const Tensor& a, const Tensor& b) {
  const auto av = a.to_double_vector();
  const auto bv = b.to_double_vector();
  double s = 0.0;
  for (size_t n = 0; n < av.size(); ++n) s += av[n] * bv[n];
  return s;
}

class RelativeShiftTest : public ::testing::TestWithParam<ShiftCase> {};

TEST_P(RelativeShiftTest, ForwardMatchesIndexFormula) {
  const ShiftCase& c = GetParam();
  const Shape shape = with_tail(c.lead, c.n_q, c.n_q + c.n_k - 1 + c.extra);
  for (DType dtype : {DType::kF64, DType::kF32}) {
    const Tensor x = random_tensor(shape, 1, dtype);
    const Tensor s = backend::relative_shift_forward(x, c.n_k);
    EXPECT_EQ(s.dtype(), dtype);
    EXPECT_TRUE(s.is_contiguous());
    // Pure data movement: exact in either dtype.
    EXPECT_TRUE(allclose(s.to(DType::kF64), skew_loop(x, c.n_k), 0, 0));
  }
}

TEST_P(RelativeShiftTest, EqualsPadReshapeRelShift) {
  const ShiftCase& c = GetParam();
  const Tensor x = random_tensor(with_tail(c.lead, c.n_q, c.n_q + c.n_k - 1 + c.extra), 2);
  EXPECT_TRUE(allclose(backend::relative_shift_forward(x, c.n_k),
                       backend::relative_shift_pad_reshape(x, c.n_k), 0, 0));
}

TEST_P(RelativeShiftTest, EqualsGatherOfRelativeIndex) {
  const ShiftCase& c = GetParam();
  const Shape shape = with_tail(c.lead, c.n_q, c.n_q + c.n_k - 1 + c.extra);
  const Tensor x = random_tensor(shape, 3);
  // Realisation A: index[..., i, j] = j − i + n_q − 1 along the last axis.
  const Shape index_shape = with_tail(c.lead, c.n_q, c.n_k);
  Tensor index = zeros(index_shape, DType::kI64);
  const int64_t groups = shape_numel(c.lead);
  std::vector<double> idx(groups * c.n_q * c.n_k);
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t i = 0; i < c.n_q; ++i)
      for (int64_t j = 0; j < c.n_k; ++j) idx[(g * c.n_q + i) * c.n_k + j] = j - i + c.n_q - 1;
  index = tensor_from(idx, index_shape, DType::kI64);
  EXPECT_TRUE(
      allclose(backend::relative_shift_forward(x, c.n_k), backend::gather(x, -1, index), 0, 0));
}

TEST_P(RelativeShiftTest, BackwardIsTheAdjoint) {
  const ShiftCase& c = GetParam();
  const int64_t n_x = c.n_q + c.n_k - 1 + c.extra;
  const Tensor x = random_tensor(with_tail(c.lead, c.n_q, n_x), 4);
  const Tensor a = random_tensor(with_tail(c.lead, c.n_q, c.n_k), 5);
  const Tensor unskewed = backend::relative_shift_backward(a, n_x);
  EXPECT_EQ(unskewed.shape(), x.shape());
  // ⟨skew(x), a⟩ = ⟨x, unskew(a)⟩.
  EXPECT_NEAR(inner(backend::relative_shift_forward(x, c.n_k), a), inner(x, unskewed), 1e-12);
  // And the scatter by its definition: dx[i, j − i + n_q − 1] = a[i, j], zero elsewhere.
  Tensor expected = zeros(x.shape(), DType::kF64);
  const int64_t groups = shape_numel(c.lead);
  const auto av = a.to_double_vector();
  std::vector<double> ev(groups * c.n_q * n_x, 0.0);
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t i = 0; i < c.n_q; ++i)
      for (int64_t j = 0; j < c.n_k; ++j)
        ev[(g * c.n_q + i) * n_x + j - i + c.n_q - 1] = av[(g * c.n_q + i) * c.n_k + j];
  EXPECT_TRUE(allclose(unskewed, tensor_from(ev, x.shape(), DType::kF64), 0, 0));
}

INSTANTIATE_TEST_SUITE_P(Cases, RelativeShiftTest, ::testing::ValuesIn(shift_cases()),
                         [](const ::testing::TestParamInfo<ShiftCase>& info) {
                           return info.param.name;
                         });

// Shaw-style clipping: relative row r ↦ bucket clip(t_min + r, −K, K) − first.
std::vector<int64_t> clip_map(int64_t n_q, int64_t n_k, int64_t offset, int64_t clip,
                              int64_t* columns) {
  const auto d = backend::relative_distances(n_q, n_k, offset);
  auto bucket = [&](int64_t t) { return std::clamp<int64_t>(t, -clip, clip) + clip; };
  std::vector<int64_t> map(d.count);
  for (int64_t r = 0; r < d.count; ++r) map[r] = bucket(d.t_min + r) - bucket(d.t_min);
  *columns = bucket(d.t_max) - bucket(d.t_min) + 1;
  return map;
}

TEST(RelativeShift, ColumnMapForwardAndAdjoint) {
  for (const auto& [n_q, n_k, offset, clip] :
       std::vector<std::tuple<int64_t, int64_t, int64_t, int64_t>>{
           {7, 7, 0, 2}, {3, 9, 6, 1}, {5, 4, 0, 3}, {4, 11, 2, 0}}) {
    int64_t n_x = 0;
    const std::vector<int64_t> map = clip_map(n_q, n_k, offset, clip, &n_x);
    ASSERT_LT(n_x, n_q + n_k - 1);  // clipping is active: fewer columns than relative rows
    const Tensor x = random_tensor({2, 3, n_q, n_x}, 6);
    const Tensor s = backend::relative_shift_forward(x, n_k, map);
    EXPECT_TRUE(allclose(s, skew_loop(x, n_k, map), 0, 0));
    // Many j share a bucket, so the adjoint accumulates.
    const Tensor a = random_tensor({2, 3, n_q, n_k}, 7);
    const Tensor dx = backend::relative_shift_backward(a, n_x, map);
    EXPECT_NEAR(inner(s, a), inner(x, dx), 1e-12);
    // f32 accumulates in the same order.
    EXPECT_TRUE(
        allclose(backend::relative_shift_backward(a.to(DType::kF32), n_x, map).to(DType::kF64), dx,
                 1e-6, 1e-6));
  }
}

TEST(RelativeShift, NonContiguousInput) {
  // x stored transposed: [2, n_x, n_q] permuted to [2, n_q, n_x].
  const Tensor x = random_tensor({2, 9, 4}, 8).transpose(1, 2);
  ASSERT_FALSE(x.is_contiguous());
  EXPECT_TRUE(allclose(backend::relative_shift_forward(x, 6), skew_loop(x, 6), 0, 0));
  const Tensor g = random_tensor({2, 6, 4}, 9).transpose(1, 2);
  EXPECT_NEAR(inner(backend::relative_shift_forward(x, 6), g),
              inner(x, backend::relative_shift_backward(g, 9)), 1e-12);
}

TEST(RelativeShift, ParallelSizesMatchLoop) {
  // rows · n_k well above the parallel grain, so several threads share the rows.
  const int64_t n_q = 64, n_k = 96;
  const Tensor x = random_tensor({3, 4, n_q, n_q + n_k - 1}, 10, DType::kF32);
  EXPECT_TRUE(
      allclose(backend::relative_shift_forward(x, n_k).to(DType::kF64), skew_loop(x, n_k), 0, 0));
  const Tensor a = random_tensor({3, 4, n_q, n_k}, 11, DType::kF32);
  const Tensor dx = backend::relative_shift_backward(a, n_q + n_k - 1);
  EXPECT_TRUE(allclose(backend::relative_shift_forward(dx, n_k), a, 0, 0));  // skew∘unskew = id
}

TEST(RelativeShift, LegacyCausalOnlyTableIsExactOnlyBelowTheDiagonal) {
  // Transformer-XL's original shift: only the n rows t = −(n−1) … 0 (the first n columns of the
  // full table) through the same pad-reshape. Exact on j <= i (encodings.md 3.5), wrong above
  // (the zero pad or the start of the next row).
  const int64_t n = 6;
  const Tensor full = random_tensor({n, 2 * n - 1}, 12);
  const Tensor truth = backend::relative_shift_forward(full, n);
  const Tensor legacy = backend::relative_shift_pad_reshape(full.narrow(1, 0, n).contiguous(), n);
  int64_t wrong_above = 0;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      if (j <= i) {
        EXPECT_EQ(legacy.at({i, j}), truth.at({i, j})) << i << "," << j;
      } else {
        wrong_above += legacy.at({i, j}) != truth.at({i, j});
      }
    }
  EXPECT_EQ(wrong_above, n * (n - 1) / 2);
}

TEST(RelativeShift, Distances) {
  const auto self = backend::relative_distances(5, 5, 0);
  EXPECT_EQ(self.t_min, -4);
  EXPECT_EQ(self.t_max, 4);
  EXPECT_EQ(self.count, 9);
  const auto chunk = backend::relative_distances(3, 7, 4);  // last 3 of 7 keys
  EXPECT_EQ(chunk.t_min, -6);
  EXPECT_EQ(chunk.t_max, 2);
  EXPECT_EQ(chunk.count, 9);
}

TEST(RelativeShift, BadInputsThrow) {
  const Tensor x = random_tensor({2, 4, 8}, 13);
  expect_error([&] { backend::relative_shift_forward(x, 6); }, "relative rows are needed");
  expect_error([&] { backend::relative_shift_forward(random_tensor({8}, 1), 2); },
               "must be [..., n_q, n_x]");
  expect_error([&] { backend::relative_shift_forward(x, 3, {0, 1, 2}); }, "column map has 3");
  expect_error(
      [&] {
        backend::relative_shift_forward(x, 2, {0, 1, 2, 3, 9});
      },
      "outside the 8 columns");
  expect_error(
      [&] {
        backend::relative_shift_backward(random_tensor({4, 5}, 1), 7);
      },
      "relative rows are needed");
  expect_error([&] { backend::relative_shift_forward(x.to(DType::kI64), 2); }, "not supported");
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
