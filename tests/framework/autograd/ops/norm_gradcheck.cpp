// Norm ops: fused backward against the composed elementwise version and finite differences.
#include <ostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "framework/autograd/function.h"
#include "framework/autograd/ops/elementwise.h"
#include "framework/autograd/ops/norm.h"
#include "framework/backend/primitives/elementwise.h"
#include "framework/backend/primitives/reduce.h"
#include "framework/tensor/random.h"
#include "tests/support/allclose.h"
#include "tests/support/gradcheck.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

using testing::allclose;
using testing::gradcheck;
using testing::GradcheckOptions;

// Mean over the last dim with keepdim, as a minimal differentiable primitive of this test:
// x: [..., D] -> [..., 1], grad_x = grad broadcast back / D. Kept local so the oracle below
// depends only on the elementwise ops.
Variable mean_last(const Variable& x) {
  const int64_t d = x.size(-1);
  Tensor m = backend::reduce_mean(x.data(), {x.dim() - 1}, /*keepdim=*/true);
  return record_op("test_mean_last", m, {x}, [shape = x.shape(), d](const Tensor& g) {
    return std::vector<Tensor>{backend::mul_scalar(g.expand(shape), 1.0 / d)};
  });
}

// Layer norm composed from elementwise ops (the oracle the fused kernels must match).
Variable composed_layer_norm(const Variable& x, const Variable& w, const Variable& b, double eps) {
  const Variable centred = x - mean_last(x);
  const Variable var = mean_last(centred * centred);
  Variable y = centred * rsqrt(var + eps);
  if (w.defined()) y = y * w;
  if (b.defined()) y = y + b;
  return y;
}

Variable composed_rms_norm(const Variable& x, const Variable& w, double eps) {
  Variable y = x * rsqrt(mean_last(x * x) + eps);
  if (w.defined()) y = y * w;
  return y;
}

struct Config {
  std::string name;
  Shape shape;
  bool weight;
  bool bias;
};

// gtest prints parameters by name instead of as raw bytes.
void PrintTo(const Config& c, std::ostream* os) {
  *os << c.name;
}

std::vector<Config> configs() {
  return {{"affine_2d", {4, 7}, true, true},    {"affine_3d", {2, 3, 5}, true, true},
          {"weight_only", {3, 6}, true, false}, {"bias_only", {3, 6}, false, true},
          {"plain", {5, 4}, false, false},      {"single_row", {9}, true, true}};
}

class NormGradTest : public ::testing::TestWithParam<Config> {};

// Gradients of x, weight and bias from the fused backward equal those of the composed graph.
TEST_P(NormGradTest, FusedBackwardMatchesComposed) {
  const Config& c = GetParam();
  const int64_t d = c.shape.back();
  Generator gen(31);
  const Tensor x = randn(c.shape, gen, 1.0, 2.0, DType::kF64);
  const Tensor w = c.weight ? randn({d}, gen, 1.0, 0.5, DType::kF64) : Tensor();
  const Tensor b = c.bias ? randn({d}, gen, 0.0, 1.0, DType::kF64) : Tensor();
  const Tensor grad_y = randn(c.shape, gen, 0.0, 1.0, DType::kF64);
  const auto leaf = [](const Tensor& t) { return t.defined() ? Variable(t, true) : Variable(); };

  for (bool rms : {false, true}) {
    SCOPED_TRACE(rms ? "rms_norm" : "layer_norm");
    Variable xf = leaf(x), wf = leaf(w), bf = rms ? Variable() : leaf(b);
    Variable xc = leaf(x), wc = leaf(w), bc = rms ? Variable() : leaf(b);
    const Variable fused = rms ? rms_norm(xf, wf, 1e-6) : layer_norm(xf, wf, bf, 1e-5);
    const Variable composed =
        rms ? composed_rms_norm(xc, wc, 1e-6) : composed_layer_norm(xc, wc, bc, 1e-5);
    EXPECT_TRUE(allclose(fused.data(), composed.data(), 1e-12, 1e-12));
    fused.backward(grad_y);
    composed.backward(grad_y);
    EXPECT_TRUE(allclose(xf.grad(), xc.grad(), 1e-10, 1e-12));
    if (wf.defined()) {
      EXPECT_TRUE(allclose(wf.grad(), wc.grad(), 1e-10, 1e-12));
    }
    if (bf.defined()) {
      EXPECT_TRUE(allclose(bf.grad(), bc.grad(), 1e-10, 1e-12));
    }
  }
}

// f64 inputs from Generator(seed): x ~ N(0.5, 1.5²), then the weight ~ N(1, 0.5²) when the
// config has one, then the bias ~ N(0, 1) when `with_bias`.
std::vector<Tensor> gradcheck_inputs(const Config& c, uint64_t seed, bool with_bias) {
  const int64_t d = c.shape.back();
  Generator gen(seed);
  std::vector<Tensor> inputs{randn(c.shape, gen, 0.5, 1.5, DType::kF64)};
  if (c.weight) inputs.push_back(randn({d}, gen, 1.0, 0.5, DType::kF64));
  if (with_bias) inputs.push_back(randn({d}, gen, 0.0, 1.0, DType::kF64));
  return inputs;
}

// Analytic gradients of every input against central differences in f64.
TEST_P(NormGradTest, LayerNormGradcheck) {
  const Config& c = GetParam();
  const std::vector<Tensor> inputs = gradcheck_inputs(c, 32, c.bias);
  const bool has_w = c.weight, has_b = c.bias;
  const auto f = [has_w, has_b](const std::vector<Variable>& in) {
    const Variable w = has_w ? in[1] : Variable();
    const Variable b = has_b ? in[has_w ? 2 : 1] : Variable();
    return layer_norm(in[0], w, b, 1e-5);
  };
  EXPECT_TRUE(gradcheck(f, inputs));
}

TEST_P(NormGradTest, RmsNormGradcheck) {
  const Config& c = GetParam();
  const std::vector<Tensor> inputs = gradcheck_inputs(c, 33, false);
  const bool has_w = c.weight;
  const auto f = [has_w](const std::vector<Variable>& in) {
    return rms_norm(in[0], has_w ? in[1] : Variable(), 1e-6);
  };
  EXPECT_TRUE(gradcheck(f, inputs));
}

INSTANTIATE_TEST_SUITE_P(Configs, NormGradTest, ::testing::ValuesIn(configs()),
                         [](const ::testing::TestParamInfo<Config>& info) {
                           return info.param.name;
                         });

// Strided (transposed) inputs go through .contiguous() at the kernel boundary.
TEST(NormGrad, NonContiguousInput) {
  Generator gen(34);
  const Tensor x = randn({6, 4}, gen, 0.0, 1.0, DType::kF64).transpose(0, 1);
  ASSERT_FALSE(x.is_contiguous());
  const Tensor w = randn({6}, gen, 1.0, 0.5, DType::kF64);
  const Tensor b = randn({6}, gen, 0.0, 1.0, DType::kF64);
  EXPECT_TRUE(gradcheck(
      [](const std::vector<Variable>& in) { return layer_norm(in[0], in[1], in[2]); }, {x, w, b}));
  EXPECT_TRUE(
      gradcheck([](const std::vector<Variable>& in) { return rms_norm(in[0], in[1]); }, {x, w}));
}

// Each subset of inputs needing a gradient takes its own path in the op (e.g. bias alone saves
// nothing); every subset must still give the right gradients.
TEST(NormGrad, GradientSubsets) {
  Generator gen(35);
  const Tensor x = randn({3, 5}, gen, 0.0, 1.0, DType::kF64);
  const Tensor w = randn({5}, gen, 1.0, 0.5, DType::kF64);
  const Tensor b = randn({5}, gen, 0.0, 1.0, DType::kF64);
  const auto f = [](const std::vector<Variable>& in) { return layer_norm(in[0], in[1], in[2]); };
  for (const std::vector<bool>& check : {std::vector<bool>{false, false, true},
                                         {false, true, false},
                                         {true, false, false},
                                         {false, true, true}}) {
    GradcheckOptions options;
    options.check = check;
    EXPECT_TRUE(gradcheck(f, {x, w, b}, options))
        << "x " << check[0] << " weight " << check[1] << " bias " << check[2];
  }
  GradcheckOptions weight_only;
  weight_only.check = {false, true};
  EXPECT_TRUE(gradcheck([](const std::vector<Variable>& in) { return rms_norm(in[0], in[1]); },
                        {x, w}, weight_only));
}

TEST(NormGrad, NoGraphWhenNothingNeedsGrad) {
  Generator gen(36);
  const Variable x(randn({2, 4}, gen));
  const Variable w(ones({4}));
  EXPECT_FALSE(layer_norm(x, w).requires_grad());
  EXPECT_FALSE(rms_norm(x, w).requires_grad());
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
