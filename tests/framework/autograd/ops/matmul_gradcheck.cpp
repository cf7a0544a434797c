// matmul and linear ops: finite-difference gradients, f32 backward vs f64, linear vs composed.
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "framework/autograd/ops/elementwise.h"
#include "framework/autograd/ops/matmul.h"
#include "framework/tensor/random.h"
#include "tests/support/allclose.h"
#include "tests/support/gradcheck.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

using testing::allclose;
using testing::gradcheck;

// A random tensor of `shape`; when `transposed`, stored as [..., C, R] and viewed transposed,
// so the op sees a non-contiguous input.
Tensor make_input(const Shape& shape, bool transposed, Generator& gen) {
  if (!transposed || shape.size() < 2) return rand(shape, gen, -1, 1, DType::kF64);
  Shape stored = shape;
  std::swap(stored[stored.size() - 1], stored[stored.size() - 2]);
  return rand(stored, gen, -1, 1, DType::kF64).transpose(-2, -1);
}

// Gradients of sum(f(inputs) * projection) by backward, for the inputs converted to `dtype`.
std::vector<Tensor> gradients(const std::function<Variable(const std::vector<Variable>&)>& f,
                              const std::vector<Tensor>& inputs, DType dtype) {
  std::vector<Variable> vars;
  for (const Tensor& t : inputs) vars.emplace_back(t.to(dtype), true);
  const Variable out = f(vars);
  Generator gen(99);
  out.backward(randn(out.shape(), gen, 0.0, 1.0, out.dtype()));
  std::vector<Tensor> grads;
  for (const Variable& v : vars) grads.push_back(v.grad());
  return grads;
}

// The f32 backward runs through oneDNN with transpose flags (the f64 one through the reference
// loop): both must give the same gradients. Inputs are in [-1, 1) and contractions are short
// (<= 8 terms), so f32 rounding stays below 1e-5.
void expect_f32_gradients_match_f64(const std::function<Variable(const std::vector<Variable>&)>& f,
                                    const std::vector<Tensor>& inputs, const std::string& label) {
  const std::vector<Tensor> g64 = gradients(f, inputs, DType::kF64);
  const std::vector<Tensor> g32 = gradients(f, inputs, DType::kF32);
  for (size_t i = 0; i < inputs.size(); ++i) {
    EXPECT_EQ(g32[i].dtype(), DType::kF32) << label;
    EXPECT_TRUE(allclose(g32[i], g64[i], 1e-5, 1e-5)) << label << " input " << i;
  }
}

struct MatmulCase {
  std::string name;
  Shape a;  // as stored (flags apply on top)
  Shape b;
  bool transpose_a = false;
  bool transpose_b = false;
};

std::vector<MatmulCase> matmul_cases() {
  return {
      {"matrix", {3, 4}, {4, 2}},
      {"dot", {4}, {4}},
      {"vector_matrix", {4}, {4, 3}},
      {"matrix_vector", {3, 4}, {4}},
      {"batched_matrix_vector", {2, 3, 4}, {4}},
      {"vector_batched", {4}, {2, 4, 3}},
      {"batched", {2, 3, 4}, {2, 4, 2}},
      {"broadcast_batch", {2, 1, 3, 4}, {3, 4, 2}},
      {"batched_times_matrix", {2, 3, 4}, {4, 2}},  // dB as one product over flattened rows
      {"matrix_times_batched", {3, 4}, {2, 4, 2}},
      {"size_one_batch", {2, 3, 4}, {1, 4, 2}},
      {"transpose_a", {4, 3}, {4, 2}, true, false},
      {"transpose_b", {3, 4}, {2, 4}, false, true},
      {"transpose_both_batched", {2, 4, 3}, {2, 2, 4}, true, true},
      {"batched_times_matrix_transpose_b", {2, 3, 4}, {2, 4}, false, true},
      {"batched_transpose_a_times_matrix", {2, 4, 3}, {4, 2}, true, false},
      {"transpose_b_broadcast", {2, 1, 3, 4}, {3, 2, 4}, false, true},
  };
}

class MatmulGradTest : public ::testing::TestWithParam<MatmulCase> {};

TEST_P(MatmulGradTest, GradientMatchesFiniteDifferences) {
  const MatmulCase& c = GetParam();
  const auto f = [&](const std::vector<Variable>& in) {
    return matmul(in[0], in[1], c.transpose_a, c.transpose_b);
  };
  Generator gen(5);
  for (bool transposed : {false, true}) {
    const std::vector<Tensor> inputs = {make_input(c.a, transposed, gen),
                                        make_input(c.b, transposed, gen)};
    EXPECT_TRUE(gradcheck(f, inputs)) << (transposed ? "transposed views" : "contiguous");
  }
}

TEST_P(MatmulGradTest, F32GradientsMatchF64) {
  const MatmulCase& c = GetParam();
  Generator gen(7);
  expect_f32_gradients_match_f64(
      [&](const std::vector<Variable>& in) {
        return matmul(in[0], in[1], c.transpose_a, c.transpose_b);
      },
      {make_input(c.a, false, gen), make_input(c.b, true, gen)}, c.name);
}

INSTANTIATE_TEST_SUITE_P(Shapes, MatmulGradTest, ::testing::ValuesIn(matmul_cases()),
                         [](const ::testing::TestParamInfo<MatmulCase>& info) {
                           return info.param.name;
                         });

TEST(MatmulGrad, OnlyTheInputThatNeedsAGradientGetsOne) {
  Generator gen(9);
  Variable a(rand({3, 4}, gen, -1, 1, DType::kF64), true);
  Variable b(rand({4, 2}, gen, -1, 1, DType::kF64), false);
  matmul(a, b).backward(ones({3, 2}, DType::kF64));
  EXPECT_TRUE(a.grad().defined());
  EXPECT_FALSE(b.grad().defined());
  // dA = 1·Bᵀ: every row of dA is the row sums of B.
  const Tensor bd = b.data();
  for (int64_t i = 0; i < 3; ++i) {
    for (int64_t k = 0; k < 4; ++k) {
      EXPECT_NEAR(a.grad().at({i, k}), bd.at({k, 0}) + bd.at({k, 1}), 1e-15);
    }
  }
}

struct LinearCase {
  std::string name;
  Shape x;
  int64_t out_features;
  bool bias;
  bool transposed_x = false;
};

std::vector<LinearCase> linear_cases() {
  return {
      {"bias", {3, 4}, 2, true},
      {"no_bias", {3, 4}, 2, false},
      {"input_3d", {2, 3, 4}, 3, true},
      {"input_1d", {4}, 3, true},
      {"transposed_x", {3, 4}, 2, true, true},
      {"input_3d_no_bias", {2, 1, 5}, 2, false},
  };
}

class LinearGradTest : public ::testing::TestWithParam<LinearCase> {};

std::vector<Tensor> linear_inputs(const LinearCase& c, Generator& gen) {
  std::vector<Tensor> inputs = {make_input(c.x, c.transposed_x, gen),
                                rand({c.out_features, c.x.back()}, gen, -1, 1, DType::kF64)};
  if (c.bias) inputs.push_back(rand({c.out_features}, gen, -1, 1, DType::kF64));
  return inputs;
}

Variable apply_linear(const std::vector<Variable>& in) {
  return linear(in[0], in[1], in.size() > 2 ? in[2] : Variable());
}

TEST_P(LinearGradTest, GradientMatchesFiniteDifferences) {
  Generator gen(11);
  EXPECT_TRUE(gradcheck(apply_linear, linear_inputs(GetParam(), gen)));
}

TEST_P(LinearGradTest, F32GradientsMatchF64) {
  Generator gen(13);
  expect_f32_gradients_match_f64(apply_linear, linear_inputs(GetParam(), gen), GetParam().name);
}

TEST_P(LinearGradTest, MatchesComposedMatmulPlusBias) {
  const LinearCase& c = GetParam();
  Generator gen(17);
  const std::vector<Tensor> inputs = linear_inputs(c, gen);
  const auto composed = [](const std::vector<Variable>& in) {
    const Variable y = matmul(in[0], in[1], false, /*transpose_b=*/true);
    return in.size() > 2 ? y + in[2] : y;
  };
  const Tensor fused_out = apply_linear({Variable(inputs[0]), Variable(inputs[1]),
                                         c.bias ? Variable(inputs[2]) : Variable()})
                               .data();
  std::vector<Variable> plain;
  for (const Tensor& t : inputs) plain.emplace_back(t);
  EXPECT_TRUE(allclose(fused_out, composed(plain).data(), 1e-13, 1e-13));
  const std::vector<Tensor> fused_grads = gradients(apply_linear, inputs, DType::kF64);
  const std::vector<Tensor> composed_grads = gradients(composed, inputs, DType::kF64);
  for (size_t i = 0; i < inputs.size(); ++i) {
    EXPECT_TRUE(allclose(fused_grads[i], composed_grads[i], 1e-13, 1e-13)) << "input " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, LinearGradTest, ::testing::ValuesIn(linear_cases()),
                         [](const ::testing::TestParamInfo<LinearCase>& info) {
                           return info.param.name;
                         });

TEST(LinearGrad, WeightOnly) {
  Generator gen(19);
  const std::vector<Tensor> inputs = {rand({2, 3, 4}, gen, -1, 1, DType::kF64),
                                      rand({2, 4}, gen, -1, 1, DType::kF64),
                                      rand({2}, gen, -1, 1, DType::kF64)};
  testing::GradcheckOptions options;
  options.check = {false, true, false};
  EXPECT_TRUE(gradcheck(apply_linear, inputs, options));
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
