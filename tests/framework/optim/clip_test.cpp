// Gradient clipping: global norm in double, exact scaling, skips, duplicates, non-finite grads.
#include "framework/optim/clip.h"

#include <cmath>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "framework/backend/cpu/parallel.h"
#include "framework/tensor/random.h"
#include "tests/support/allclose.h"

namespace rota::optim {
namespace ROTA_TEST_FILE_NS {

using rota::testing::allclose;

/// Parameters of mixed dtypes with gradients, plus one without a gradient.
struct GradFixture {
  std::vector<Variable> params;
  std::vector<Tensor> grads;  // snapshots of the gradients (undefined for the grad-less one)

  explicit GradFixture(uint64_t seed, double grad_scale) {
    Generator gen(seed);
    const std::vector<Shape> shapes = {{4, 5}, {7}, {3, 2, 2}, {6}};
    const std::vector<DType> dtypes = {DType::kF32, DType::kF64, DType::kF32, DType::kF64};
    for (size_t i = 0; i < shapes.size(); ++i) {
      Variable p(zeros(shapes[i], dtypes[i]), true);
      if (i != 3) {
        p.set_grad(randn(shapes[i], gen, 0.0, grad_scale, dtypes[i]));
        grads.push_back(p.grad().clone());
      } else {
        grads.emplace_back();
      }
      params.push_back(p);
    }
  }

  /// sqrt(sum g^2) over every gradient element, in plain doubles.
  double reference_norm() const {
    double sum = 0;
    for (const Tensor& g : grads) {
      if (!g.defined()) continue;
      for (double v : g.to_double_vector()) sum += v * v;
    }
    return std::sqrt(sum);
  }
};

TEST(ClipGradNorm, BelowTheLimitReturnsNormAndLeavesGradsAlone) {
  GradFixture s(1, 0.1);
  const double expected = s.reference_norm();
  const double norm = clip_grad_norm(s.params, expected * 1.5);
  EXPECT_NEAR(norm, expected, 1e-14 * expected);
  EXPECT_NEAR(grad_norm(s.params), expected, 1e-14 * expected);
  for (size_t i = 0; i < 3; ++i) EXPECT_TRUE(allclose(s.params[i].grad(), s.grads[i], 0, 0));
  EXPECT_FALSE(s.params[3].grad().defined());
}

TEST(ClipGradNorm, AboveTheLimitScalesEveryGradByMaxOverNorm) {
  GradFixture s(2, 3.0);
  const double expected = s.reference_norm();
  const double max_norm = 0.5;
  ASSERT_GT(expected, max_norm);
  const double norm = clip_grad_norm(s.params, max_norm);
  EXPECT_NEAR(norm, expected, 1e-14 * expected);  // the pre-clip norm
  const double scale = max_norm / norm;
  for (size_t i = 0; i < 3; ++i) {
    // Each element is g * (max_norm / norm) formed in double, rounded once to its dtype.
    std::vector<double> scaled;
    for (double v : s.grads[i].to_double_vector()) scaled.push_back(v * scale);
    const Tensor expected_grad =
        tensor_from(scaled, s.grads[i].shape(), DType::kF64).to(s.grads[i].dtype());
    EXPECT_TRUE(allclose(s.params[i].grad(), expected_grad, 0, 0)) << "param " << i;
  }
  // The clipped global norm is max_norm (to f32 rounding of the f32 gradients).
  EXPECT_NEAR(grad_norm(s.params), max_norm, 1e-7 * max_norm);
}

TEST(ClipGradNorm, DuplicateParametersCountOnceAndScaleOnce) {
  Variable p(zeros({3}, DType::kF64), true);
  p.set_grad(tensor_from({3.0, 0.0, 4.0}, {3}, DType::kF64));
  EXPECT_DOUBLE_EQ(grad_norm({p, p}), 5.0);
  EXPECT_DOUBLE_EQ(clip_grad_norm({p, p}, 1.0), 5.0);
  EXPECT_TRUE(allclose(p.grad(), tensor_from({0.6, 0.0, 0.8}, {3}, DType::kF64), 1e-15, 0));
}

TEST(ClipGradNorm, NonFiniteGradientsAreReportedAndNothingIsScaled) {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (double bad : {inf, -inf, nan}) {
    GradFixture s(3, 3.0);
    Tensor g = s.params[1].grad();
    g.set({2}, bad);
    const Tensor before = g.clone();
    const double norm = clip_grad_norm(s.params, 0.1);
    if (std::isnan(bad)) {
      EXPECT_TRUE(std::isnan(norm));
    } else {
      EXPECT_EQ(norm, inf);
    }
    EXPECT_TRUE(allclose(s.params[0].grad(), s.grads[0], 0, 0));
    const std::vector<double> after = s.params[1].grad().to_double_vector();
    const std::vector<double> original = before.to_double_vector();
    for (size_t i = 0; i < after.size(); ++i) {
      if (i == 2) continue;
      EXPECT_EQ(after[i], original[i]);
    }
  }
  // NaN wins over inf (inf + NaN = NaN).
  GradFixture s(4, 1.0);
  Tensor(s.params[0].grad()).set({0, 0}, inf);
  Tensor(s.params[2].grad()).set({1, 1, 1}, nan);
  EXPECT_TRUE(std::isnan(clip_grad_norm(s.params, 1.0)));
}

TEST(ClipGradNorm, LargeTensorsAreDeterministicAcrossThreadCounts) {
  // 300k elements = many 4096-element blocks, reduced in parallel.
  Generator gen(5);
  Variable p(zeros({300, 1000}), true);
  p.set_grad(randn({300, 1000}, gen));
  double reference = 0;
  for (double v : p.grad().to_double_vector()) reference += v * v;
  reference = std::sqrt(reference);
  const int threads = backend::num_threads();
  backend::set_num_threads(1);
  const double one_thread = grad_norm({p});
  backend::set_num_threads(std::max(2, threads));
  const double many_threads = grad_norm({p});
  backend::set_num_threads(threads);
  EXPECT_EQ(one_thread, many_threads);  // bit-identical
  // Blocked vs sequential summation of 3e5 positive terms differs by a few 1e-16 relative.
  EXPECT_NEAR(one_thread, reference, 1e-13 * reference);
  const std::vector<double> before = p.grad().to_double_vector();
  EXPECT_EQ(clip_grad_norm({p}, 1.0), one_thread);
  std::vector<double> scaled;
  for (double v : before) scaled.push_back(v * (1.0 / one_thread));
  EXPECT_TRUE(
      allclose(p.grad(), tensor_from(scaled, {300, 1000}, DType::kF64).to(DType::kF32), 0, 0));
  EXPECT_NEAR(grad_norm({p}), 1.0, 1e-6);
}

TEST(ClipGradNorm, NoGradientsGiveZeroAndBadMaxNormThrows) {
  Variable p(ones({3}), true);
  EXPECT_EQ(clip_grad_norm({p}, 1.0), 0.0);
  EXPECT_EQ(grad_norm({}), 0.0);
  EXPECT_THROW(clip_grad_norm({p}, 0.0), Error);
  EXPECT_THROW(clip_grad_norm({p}, -1.0), Error);
  EXPECT_THROW(clip_grad_norm({p}, std::numeric_limits<double>::infinity()), Error);
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::optim
