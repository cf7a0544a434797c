// relative_shift / relative_unshift / relative_logits: forward against loops and gradients
// against finite differences (bucket maps, per-head tables, non-contiguous inputs).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "framework/autograd/ops/relative_shift.h"
#include "framework/autograd/ops/shape.h"
#include "framework/backend/primitives/relative_shift.h"
#include "framework/tensor/random.h"
#include "tests/support/allclose.h"
#include "tests/support/gradcheck.h"
#include "tests/support/tensor_factory.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

using testing::allclose;
using testing::gradcheck;
using testing::random_tensor;

// Clipped bucket map (Shaw): relative row r ↦ clip(t_min + r, −K, K) − clip(t_min, −K, K).
std::vector<int64_t> clip_map(int64_t n_q, int64_t n_k, int64_t offset, int64_t clip,
                              int64_t* columns) {
  const auto d = backend::relative_distances(n_q, n_k, offset);
  auto bucket = [&](int64_t t) { return std::clamp<int64_t>(t, -clip, clip); };
  std::vector<int64_t> map(d.count);
  for (int64_t r = 0; r < d.count; ++r) map[r] = bucket(d.t_min + r) - bucket(d.t_min);
  *columns = bucket(d.t_max) - bucket(d.t_min) + 1;
  return map;
}

struct ShiftCase {
  std::string name;
  int64_t n_q, n_k, extra;
  int64_t clip;  // < 0: identity map
  int64_t offset;
};

std::vector<ShiftCase> cases() {
  return {{"self", 5, 5, 0, -1, 0},
          {"cross", 3, 6, 2, -1, 0},
          {"more_queries", 6, 3, 0, -1, 0},
          {"clipped_self", 6, 6, 0, 2, 0},
          {"clipped_cross", 3, 8, 0, 1, 5}};
}

class RelativeShiftGrad : public ::testing::TestWithParam<ShiftCase> {
 protected:
  std::vector<int64_t> map_;
  int64_t n_x_ = 0;
  void SetUp() override {
    const ShiftCase& c = GetParam();
    if (c.clip >= 0) {
      map_ = clip_map(c.n_q, c.n_k, c.offset, c.clip, &n_x_);
    } else {
      n_x_ = c.n_q + c.n_k - 1 + c.extra;
    }
  }
};

TEST_P(RelativeShiftGrad, ShiftGradient) {
  const ShiftCase& c = GetParam();
  const auto f = [&](const std::vector<Variable>& in) {
    return relative_shift(in[0], c.n_k, map_);
  };
  EXPECT_TRUE(gradcheck(f, {random_tensor({2, 3, c.n_q, n_x_}, 1)}));
  // Non-contiguous: stored as [2, n_x, 3, n_q].
  const Tensor nc = random_tensor({2, n_x_, 3, c.n_q}, 2).permute({0, 2, 3, 1});
  ASSERT_FALSE(nc.is_contiguous());
  EXPECT_TRUE(gradcheck(f, {nc}));
}

TEST_P(RelativeShiftGrad, UnshiftGradientAndForward) {
  const ShiftCase& c = GetParam();
  const auto f = [&](const std::vector<Variable>& in) {
    return relative_unshift(in[0], n_x_, map_);
  };
  EXPECT_TRUE(gradcheck(f, {random_tensor({2, c.n_q, c.n_k}, 3)}));
  // Forward: out[i, c(j − i + n_q − 1)] += s[i, j].
  const Tensor s = random_tensor({c.n_q, c.n_k}, 4);
  std::vector<double> expected(c.n_q * n_x_, 0.0);
  for (int64_t i = 0; i < c.n_q; ++i)
    for (int64_t j = 0; j < c.n_k; ++j) {
      const int64_t r = j - i + c.n_q - 1;
      expected[i * n_x_ + (map_.empty() ? r : map_[r])] += s.at({i, j});
    }
  EXPECT_TRUE(allclose(relative_unshift(Variable(s), n_x_, map_).data(),
                       tensor_from(expected, {c.n_q, n_x_}, DType::kF64), 1e-14, 1e-14));
}

TEST_P(RelativeShiftGrad, LogitsSharedAndPerHeadTables) {
  const ShiftCase& c = GetParam();
  const int64_t b = 2, h = 2, d = 3;
  const Tensor q = random_tensor({b, h, c.n_q, d}, 5);
  for (bool per_head : {false, true}) {
    const Shape rows_shape = per_head ? Shape{h, n_x_, d} : Shape{n_x_, d};
    const Tensor rows = random_tensor(rows_shape, 6);
    // Forward: a[b, h, i, j] = q_i · rows[c(j − i + n_q − 1)].
    const Tensor a = relative_logits(Variable(q), Variable(rows), c.n_k, map_).data();
    ASSERT_EQ(a.shape(), (Shape{b, h, c.n_q, c.n_k}));
    double worst = 0.0;
    for (int64_t bb = 0; bb < b; ++bb)
      for (int64_t hh = 0; hh < h; ++hh)
        for (int64_t i = 0; i < c.n_q; ++i)
          for (int64_t j = 0; j < c.n_k; ++j) {
            const int64_t r = j - i + c.n_q - 1;
            const int64_t col = map_.empty() ? r : map_[r];
            double e = 0.0;
            for (int64_t dd = 0; dd < d; ++dd) {
              e += q.at({bb, hh, i, dd}) * (per_head ? rows.at({hh, col, dd}) : rows.at({col, dd}));
            }
            worst = std::max(worst, std::abs(e - a.at({bb, hh, i, j})));
          }
    EXPECT_LT(worst, 1e-13);
    const auto f = [&](const std::vector<Variable>& in) {
      return relative_logits(in[0], in[1], c.n_k, map_);
    };
    EXPECT_TRUE(gradcheck(f, {q, rows}));
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, RelativeShiftGrad, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<ShiftCase>& info) {
                           return info.param.name;
                         });

TEST(RelativeShiftGrad, NoGraphWhenNoGradientIsNeeded) {
  const Variable x(random_tensor({3, 6}, 7), false);
  const Variable s = relative_shift(x, 4);
  EXPECT_TRUE(s.is_leaf());
  EXPECT_FALSE(s.requires_grad());
}

TEST(RelativeShiftGrad, LogitsRejectMismatchedTables) {
  const Variable q(random_tensor({1, 2, 3, 4}, 8));
  EXPECT_THROW(relative_logits(q, Variable(random_tensor({5, 3}, 9)), 3), Error);     // D differs
  EXPECT_THROW(relative_logits(q, Variable(random_tensor({3, 5, 4}, 9)), 3), Error);  // H differs
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
