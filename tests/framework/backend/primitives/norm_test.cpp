// Norm kernels: forward against plain double loops, saved statistics, determinism, bad input.
#include <cmath>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "framework/backend/cpu/parallel.h"
#include "framework/backend/primitives/norm.h"
#include "framework/tensor/random.h"
#include "tests/support/allclose.h"
#include "tests/support/expect_error.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

using testing::allclose;

// Reference result of a norm over the last dim, computed in double from scratch.
struct NormReference {
  Tensor y;
  Tensor mean;
  Tensor rstd;
};

// centered = layer norm (subtract the mean), otherwise RMS norm. w/b may be undefined.
NormReference norm_reference(const Tensor& x, const Tensor& w, const Tensor& b, double eps,
                             bool centered) {
  const int64_t d = x.size(-1);
  const int64_t rows = x.numel() / d;
  const std::vector<double> xv = x.to_double_vector();
  const std::vector<double> wv = w.defined() ? w.to_double_vector() : std::vector<double>(d, 1.0);
  const std::vector<double> bv = b.defined() ? b.to_double_vector() : std::vector<double>(d, 0.0);
  std::vector<double> y(xv.size()), mean(rows), rstd(rows);
  for (int64_t r = 0; r < rows; ++r) {
    double mu = 0;
    if (centered) {
      for (int64_t i = 0; i < d; ++i) mu += xv[r * d + i];
      mu /= d;
    }
    double var = 0;
    for (int64_t i = 0; i < d; ++i) var += (xv[r * d + i] - mu) * (xv[r * d + i] - mu);
    var /= d;
    const double rs = 1.0 / std::sqrt(var + eps);
    for (int64_t i = 0; i < d; ++i) {
      y[r * d + i] = (xv[r * d + i] - mu) * rs * wv[i] + (centered ? bv[i] : 0.0);
    }
    mean[r] = mu;
    rstd[r] = rs;
  }
  return {tensor_from(y, x.shape(), DType::kF64), tensor_from(mean, {rows}, DType::kF64),
          tensor_from(rstd, {rows}, DType::kF64)};
}

struct NormCase {
  std::string name;
  Shape shape;
  bool weight;
  bool bias;
};

// gtest prints parameters by name instead of as raw bytes.
void PrintTo(const NormCase& c, std::ostream* os) {
  *os << c.name;
}

std::vector<NormCase> norm_cases() {
  return {
      {"plain_2d", {4, 7}, false, false},   {"weight_2d", {4, 7}, true, false},
      {"bias_2d", {4, 7}, false, true},     {"affine_2d", {5, 16}, true, true},
      {"affine_3d", {2, 3, 9}, true, true}, {"plain_3d", {3, 2, 5}, false, false},
      {"vector_1d", {11}, true, true},      {"wide_rows", {3, 1000}, true, true},
  };
}

class NormForwardTest : public ::testing::TestWithParam<NormCase> {};

TEST_P(NormForwardTest, LayerNormMatchesDoubleLoop) {
  const NormCase& c = GetParam();
  const int64_t d = c.shape.back();
  Generator gen(21);
  // An offset mean checks that the variance is taken about the mean, not about zero.
  const Tensor x = rand(c.shape, gen, 2.0, 5.0, DType::kF64);
  const Tensor w = c.weight ? rand({d}, gen, 0.5, 1.5, DType::kF64) : Tensor();
  const Tensor b = c.bias ? rand({d}, gen, -1.0, 1.0, DType::kF64) : Tensor();
  const double eps = 1e-5;
  const NormReference ref = norm_reference(x, w, b, eps, true);

  const backend::LayerNormForward out = backend::layer_norm_forward(x, w, b, eps);
  EXPECT_TRUE(allclose(out.y, ref.y, 1e-12, 1e-12));
  EXPECT_TRUE(allclose(out.mean, ref.mean, 1e-12, 1e-12));
  EXPECT_TRUE(allclose(out.rstd, ref.rstd, 1e-12, 1e-12));

  const backend::LayerNormForward out32 =
      backend::layer_norm_forward(x.to(DType::kF32), w.defined() ? w.to(DType::kF32) : w,
                                  b.defined() ? b.to(DType::kF32) : b, eps);
  EXPECT_EQ(out32.y.dtype(), DType::kF32);
  EXPECT_TRUE(allclose(out32.y, ref.y.to(DType::kF32), 1e-4, 1e-5));
}

TEST_P(NormForwardTest, RmsNormMatchesDoubleLoop) {
  const NormCase& c = GetParam();
  const int64_t d = c.shape.back();
  Generator gen(22);
  const Tensor x = rand(c.shape, gen, -2.0, 3.0, DType::kF64);
  const Tensor w = c.weight ? rand({d}, gen, 0.5, 1.5, DType::kF64) : Tensor();
  const double eps = 1e-6;
  const NormReference ref = norm_reference(x, w, Tensor(), eps, false);

  const backend::RmsNormForward out = backend::rms_norm_forward(x, w, eps);
  EXPECT_TRUE(allclose(out.y, ref.y, 1e-12, 1e-12));
  EXPECT_TRUE(allclose(out.rstd, ref.rstd, 1e-12, 1e-12));

  const backend::RmsNormForward out32 =
      backend::rms_norm_forward(x.to(DType::kF32), w.defined() ? w.to(DType::kF32) : w, eps);
  EXPECT_TRUE(allclose(out32.y, ref.y.to(DType::kF32), 1e-4, 1e-5));
}

INSTANTIATE_TEST_SUITE_P(Shapes, NormForwardTest, ::testing::ValuesIn(norm_cases()),
                         [](const ::testing::TestParamInfo<NormCase>& info) {
                           return info.param.name;
                         });

TEST(NormForward, NonContiguousInputMatchesContiguousCopy) {
  Generator gen(23);
  const Tensor base = randn({6, 5}, gen, 0.0, 1.0, DType::kF64);
  const Tensor x = base.transpose(0, 1);  // [5, 6], rows are strided
  ASSERT_FALSE(x.is_contiguous());
  const Tensor w = randn({6}, gen, 1.0, 0.2, DType::kF64);
  EXPECT_TRUE(allclose(backend::layer_norm_forward(x, w, Tensor(), 1e-5).y,
                       backend::layer_norm_forward(x.clone(), w, Tensor(), 1e-5).y, 0, 0));
  EXPECT_TRUE(allclose(backend::rms_norm_forward(x, w, 1e-6).y,
                       backend::rms_norm_forward(x.clone(), w, 1e-6).y, 0, 0));
}

// D = 1 has no meaningful normalisation (x - mean = 0) but must run and stay finite.
TEST(NormForward, SingleFeatureDoesNotCrash) {
  Generator gen(24);
  const Tensor x = randn({4, 1}, gen, 0.0, 1.0, DType::kF64);
  const Tensor b = tensor_from({0.25}, {1}, DType::kF64);
  const backend::LayerNormForward ln = backend::layer_norm_forward(x, Tensor(), b, 1e-5);
  EXPECT_TRUE(allclose(ln.y, full({4, 1}, 0.25, DType::kF64), 0, 1e-12));
  const Tensor g = randn({4, 1}, gen, 0.0, 1.0, DType::kF64);
  const backend::LayerNormGrads grads =
      backend::layer_norm_backward(g, x, ln.mean, ln.rstd, Tensor(), {});
  EXPECT_TRUE(allclose(grads.dx, zeros({4, 1}, DType::kF64), 0, 1e-9));
  const backend::RmsNormForward rms = backend::rms_norm_forward(x, Tensor(), 1e-6);
  for (double v : rms.y.to_double_vector()) EXPECT_TRUE(std::isfinite(v));
}

TEST(NormForward, EmptyRowsGiveEmptyOutputs) {
  const Tensor x = zeros({0, 8}, DType::kF32);
  const backend::LayerNormForward ln = backend::layer_norm_forward(x, Tensor(), Tensor(), 1e-5);
  EXPECT_EQ(ln.y.shape(), (Shape{0, 8}));
  EXPECT_EQ(ln.mean.shape(), (Shape{0}));
  const backend::LayerNormGrads grads =
      backend::layer_norm_backward(x, x, ln.mean, ln.rstd, Tensor(), {});
  EXPECT_TRUE(allclose(grads.dweight, zeros({8}), 0, 0));
  EXPECT_TRUE(allclose(grads.dbias, zeros({8}), 0, 0));
}

// The weight/bias sums use fixed row blocks, so any thread count gives the same bits.
TEST(NormBackward, ParameterGradientsIndependentOfThreadCount) {
  Generator gen(25);
  const Shape shape{300, 256};  // enough work to run in parallel
  const Tensor x = randn(shape, gen);
  const Tensor w = randn({256}, gen, 1.0, 0.3);
  const Tensor g = randn(shape, gen);
  const int saved_threads = backend::num_threads();
  std::vector<std::vector<double>> runs;
  for (int threads : {1, 2}) {
    backend::set_num_threads(threads);
    const backend::LayerNormForward fwd = backend::layer_norm_forward(x, w, Tensor(), 1e-5);
    const backend::LayerNormGrads grads =
        backend::layer_norm_backward(g, x, fwd.mean, fwd.rstd, w, {});
    const backend::RmsNormForward rms = backend::rms_norm_forward(x, w, 1e-6);
    const backend::RmsNormGrads rgrads = backend::rms_norm_backward(g, x, rms.rstd, w, {});
    std::vector<double> all = grads.dweight.to_double_vector();
    for (const Tensor& t : {grads.dbias, grads.dx, rgrads.dweight, rgrads.dx}) {
      const std::vector<double> v = t.to_double_vector();
      all.insert(all.end(), v.begin(), v.end());
    }
    runs.push_back(all);
  }
  backend::set_num_threads(saved_threads);
  ASSERT_EQ(runs[0].size(), runs[1].size());
  for (size_t i = 0; i < runs[0].size(); ++i) ASSERT_EQ(runs[0][i], runs[1][i]) << "element " << i;
}

// f32 backward follows the f64 backward (same formula, float rounding).
TEST(NormBackward, Float32FollowsFloat64) {
  Generator gen(26);
  const Tensor x = randn({7, 33}, gen, 0.5, 2.0, DType::kF64);
  const Tensor w = randn({33}, gen, 1.0, 0.3, DType::kF64);
  const Tensor g = randn({7, 33}, gen, 0.0, 1.0, DType::kF64);
  const auto run = [&](DType dt) {
    const Tensor xd = x.to(dt), wd = w.to(dt), gd = g.to(dt);
    const backend::LayerNormForward fwd = backend::layer_norm_forward(xd, wd, Tensor(), 1e-5);
    return backend::layer_norm_backward(gd, xd, fwd.mean, fwd.rstd, wd, {});
  };
  const backend::LayerNormGrads a = run(DType::kF64);
  const backend::LayerNormGrads b = run(DType::kF32);
  EXPECT_TRUE(allclose(b.dx, a.dx.to(DType::kF32), 1e-4, 1e-5));
  EXPECT_TRUE(allclose(b.dweight, a.dweight.to(DType::kF32), 1e-4, 1e-5));
  EXPECT_TRUE(allclose(b.dbias, a.dbias.to(DType::kF32), 1e-4, 1e-5));
}

TEST(NormBackward, OnlyRequestedGradientsAreComputed) {
  Generator gen(27);
  const Tensor x = randn({3, 4}, gen);
  const Tensor g = randn({3, 4}, gen);
  const backend::LayerNormForward fwd = backend::layer_norm_forward(x, Tensor(), Tensor(), 1e-5);
  backend::NormGradRequest request;
  request.x = false;
  request.bias = false;
  const backend::LayerNormGrads grads =
      backend::layer_norm_backward(g, x, fwd.mean, fwd.rstd, Tensor(), request);
  EXPECT_FALSE(grads.dx.defined());
  EXPECT_TRUE(grads.dweight.defined());
  EXPECT_FALSE(grads.dbias.defined());
}

using rota::testing::expect_error;

TEST(NormErrors, BadParametersNameTheOpAndShapes) {
  const Tensor x = zeros({2, 3, 4});
  expect_error([&] { backend::layer_norm_forward(x, zeros({3}), Tensor(), 1e-5); },
               "layer_norm: weight [3] does not match input [2,3,4] (expected [4])");
  expect_error(
      [&] {
        backend::layer_norm_forward(x, Tensor(), zeros({4, 1}), 1e-5);
      },
      "layer_norm: bias [4,1] does not match input [2,3,4]");
  expect_error([&] { backend::rms_norm_forward(x, zeros({5}), 1e-6); },
               "rms_norm: weight [5] does not match input [2,3,4]");
  expect_error([&] { backend::rms_norm_forward(x, zeros({4}, DType::kF64), 1e-6); },
               "rms_norm: weight dtype f64 differs from input dtype f32");
  expect_error([&] { backend::layer_norm_forward(zeros({3}, DType::kI64), {}, {}, 1e-5); },
               "layer_norm: dtype i64 is not supported");
  const backend::LayerNormForward fwd = backend::layer_norm_forward(x, Tensor(), Tensor(), 1e-5);
  expect_error(
      [&] {
        backend::layer_norm_backward(zeros({2, 3}), x, fwd.mean, fwd.rstd, Tensor(), {});
      },
      "layer_norm_backward: grad [2,3] does not match input [2,3,4]");
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
