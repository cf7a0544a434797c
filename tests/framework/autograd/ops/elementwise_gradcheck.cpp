// Element-wise ops: forward against a plain double loop, gradients against finite differences.
#include <cmath>
#include <functional>
#include <string>

#include <gtest/gtest.h>

#include "framework/autograd/ops/elementwise.h"
#include "framework/tensor/random.h"
#include "tests/support/allclose.h"
#include "tests/support/expect_error.h"
#include "tests/support/gradcheck.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

using testing::allclose;
using testing::expect_error;
using testing::gradcheck;

struct UnaryCase {
  std::string name;
  std::function<Variable(const Variable&)> op;
  std::function<double(double)> reference;
  double low;  // input sampling range (keeps log/sqrt/pow in their domains, avoids kinks)
  double high;
};

std::vector<UnaryCase> unary_cases() {
  const double kPi = 3.14159265358979323846;
  return {
      {"neg", [](const Variable& x) { return neg(x); }, [](double x) { return -x; }, -2, 2},
      {"exp", [](const Variable& x) { return exp(x); }, [](double x) { return std::exp(x); }, -2,
       2},
      {"log", [](const Variable& x) { return log(x); }, [](double x) { return std::log(x); }, 0.2,
       3},
      {"sqrt", [](const Variable& x) { return sqrt(x); }, [](double x) { return std::sqrt(x); },
       0.2, 3},
      {"rsqrt", [](const Variable& x) { return rsqrt(x); },
       [](double x) { return 1 / std::sqrt(x); }, 0.2, 3},
      {"abs", [](const Variable& x) { return abs(x); }, [](double x) { return std::abs(x); }, -2,
       2},
      {"square", [](const Variable& x) { return square(x); }, [](double x) { return x * x; }, -2,
       2},
      {"tanh", [](const Variable& x) { return tanh(x); }, [](double x) { return std::tanh(x); }, -2,
       2},
      {"sigmoid", [](const Variable& x) { return sigmoid(x); },
       [](double x) { return 1 / (1 + std::exp(-x)); }, -3, 3},
      {"relu", [](const Variable& x) { return relu(x); }, [](double x) { return x > 0 ? x : 0; },
       -2, 2},
      {"elu", [](const Variable& x) { return elu(x, 0.7); },
       [](double x) { return x > 0 ? x : 0.7 * (std::exp(x) - 1); }, -2, 2},
      {"one_plus_elu", [](const Variable& x) { return one_plus_elu(x); },
       [](double x) { return x > 0 ? x + 1 : std::exp(x); }, -2, 2},
      {"gelu", [](const Variable& x) { return gelu(x); },
       [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }, -3, 3},
      {"gelu_tanh", [](const Variable& x) { return gelu(x, true); },
       [kPi](double x) {
         return 0.5 * x * (1 + std::tanh(std::sqrt(2 / kPi) * (x + 0.044715 * x * x * x)));
       },
       -3, 3},
      {"silu", [](const Variable& x) { return silu(x); },
       [](double x) { return x / (1 + std::exp(-x)); }, -3, 3},
      {"sin", [](const Variable& x) { return sin(x); }, [](double x) { return std::sin(x); }, -3,
       3},
      {"cos", [](const Variable& x) { return cos(x); }, [](double x) { return std::cos(x); }, -3,
       3},
      {"pow_scalar", [](const Variable& x) { return pow_scalar(x, 2.5); },
       [](double x) { return std::pow(x, 2.5); }, 0.2, 2},
      {"add_scalar", [](const Variable& x) { return x + 1.5; }, [](double x) { return x + 1.5; },
       -2, 2},
      {"mul_scalar", [](const Variable& x) { return x * -3.0; }, [](double x) { return -3 * x; },
       -2, 2},
      {"rsub_scalar", [](const Variable& x) { return 2.0 - x; }, [](double x) { return 2 - x; }, -2,
       2},
      {"rdiv_scalar", [](const Variable& x) { return 2.0 / x; }, [](double x) { return 2 / x; },
       0.5, 2},
      {"clamp", [](const Variable& x) { return clamp(x, -0.5, 0.7); },
       [](double x) { return std::min(std::max(x, -0.5), 0.7); }, -2, 2},
  };
}

class UnaryOpTest : public ::testing::TestWithParam<UnaryCase> {};

TEST_P(UnaryOpTest, ForwardMatchesReference) {
  const UnaryCase& c = GetParam();
  Generator gen(7);
  const Tensor x = rand({3, 5}, gen, c.low, c.high, DType::kF64);
  const Tensor y = c.op(Variable(x)).data();
  std::vector<double> expected;
  for (double v : x.to_double_vector()) expected.push_back(c.reference(v));
  EXPECT_TRUE(allclose(y, tensor_from(expected, {3, 5}, DType::kF64), 1e-12, 1e-12));
  // f32 follows the same formula to float precision.
  const Tensor y32 = c.op(Variable(x.to(DType::kF32))).data();
  EXPECT_EQ(y32.dtype(), DType::kF32);
  EXPECT_TRUE(allclose(y32, tensor_from(expected, {3, 5}, DType::kF32), 1e-5, 1e-6));
}

TEST_P(UnaryOpTest, GradientMatchesFiniteDifferences) {
  const UnaryCase& c = GetParam();
  Generator gen(11);
  Tensor x = rand({4, 3}, gen, c.low, c.high, DType::kF64);
  if (c.name == "abs" || c.name == "relu" || c.name == "elu" || c.name == "one_plus_elu" ||
      c.name == "clamp") {
    // Keep samples away from the kink, where finite differences straddle two slopes.
    for (int64_t i = 0; i < 4; ++i) {
      for (int64_t j = 0; j < 3; ++j) {
        double v = x.at({i, j});
        for (double kink : {0.0, -0.5, 0.7}) {
          if (std::abs(v - kink) < 1e-3) v += 0.01;
        }
        x.set({i, j}, v);
      }
    }
  }
  EXPECT_TRUE(gradcheck([&](const std::vector<Variable>& in) { return c.op(in[0]); }, {x}));
  // A non-contiguous (transposed) input takes the same path.
  EXPECT_TRUE(
      gradcheck([&](const std::vector<Variable>& in) { return c.op(in[0]); }, {x.transpose(0, 1)}));
}

INSTANTIATE_TEST_SUITE_P(Ops, UnaryOpTest, ::testing::ValuesIn(unary_cases()),
                         [](const ::testing::TestParamInfo<UnaryCase>& info) {
                           return info.param.name;
                         });

struct BinaryCase {
  std::string name;
  std::function<Variable(const Variable&, const Variable&)> op;
  std::function<double(double, double)> reference;
};

std::vector<BinaryCase> binary_cases() {
  return {
      {"add", [](const Variable& a, const Variable& b) { return a + b; },
       [](double a, double b) { return a + b; }},
      {"sub", [](const Variable& a, const Variable& b) { return a - b; },
       [](double a, double b) { return a - b; }},
      {"mul", [](const Variable& a, const Variable& b) { return a * b; },
       [](double a, double b) { return a * b; }},
      {"div", [](const Variable& a, const Variable& b) { return a / b; },
       [](double a, double b) { return a / b; }},
      {"pow", [](const Variable& a, const Variable& b) { return pow(a, b); },
       [](double a, double b) { return std::pow(a, b); }},
      {"maximum", [](const Variable& a, const Variable& b) { return maximum(a, b); },
       [](double a, double b) { return std::max(a, b); }},
      {"minimum", [](const Variable& a, const Variable& b) { return minimum(a, b); },
       [](double a, double b) { return std::min(a, b); }},
  };
}

class BinaryOpTest : public ::testing::TestWithParam<BinaryCase> {};

// Shapes that exercise broadcasting: equal, trailing vector, leading dims, both sides.
const std::vector<std::pair<Shape, Shape>> kBroadcastShapes = {
    {{3, 4}, {3, 4}}, {{3, 4}, {4}},    {{2, 3, 4}, {3, 1}},
    {{3, 1}, {1, 4}}, {{4}, {2, 3, 4}}, {{}, {2, 3}},
};

TEST_P(BinaryOpTest, ForwardBroadcastsLikeNumPy) {
  const BinaryCase& c = GetParam();
  Generator gen(3);
  for (const auto& [sa, sb] : kBroadcastShapes) {
    const Tensor a = rand(sa, gen, 0.5, 2.0, DType::kF64);
    const Tensor b = rand(sb, gen, 0.5, 2.0, DType::kF64);
    const Tensor out = c.op(Variable(a), Variable(b)).data();
    const Shape shape = broadcast_shapes(sa, sb, "test");
    ASSERT_EQ(out.shape(), shape);
    const Tensor ae = a.expand(shape);
    const Tensor be = b.expand(shape);
    const std::vector<double> va = ae.to_double_vector();
    const std::vector<double> vb = be.to_double_vector();
    std::vector<double> expected;
    for (size_t i = 0; i < va.size(); ++i) expected.push_back(c.reference(va[i], vb[i]));
    EXPECT_TRUE(allclose(out, tensor_from(expected, shape, DType::kF64), 1e-12, 1e-12))
        << shape_str(sa) << " op " << shape_str(sb);
  }
}

TEST_P(BinaryOpTest, GradientMatchesFiniteDifferences) {
  const BinaryCase& c = GetParam();
  Generator gen(5);
  for (const auto& [sa, sb] : kBroadcastShapes) {
    const Tensor a = rand(sa, gen, 0.5, 2.0, DType::kF64);
    Tensor b = rand(sb, gen, 0.5, 2.0, DType::kF64);
    EXPECT_TRUE(
        gradcheck([&](const std::vector<Variable>& in) { return c.op(in[0], in[1]); }, {a, b}))
        << shape_str(sa) << " op " << shape_str(sb);
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, BinaryOpTest, ::testing::ValuesIn(binary_cases()),
                         [](const ::testing::TestParamInfo<BinaryCase>& info) {
                           return info.param.name;
                         });

TEST(BinaryOp, MaximumTieSplitsGradient) {
  Variable a(tensor_from({1.0, 2.0}, {2}, DType::kF64), true);
  Variable b(tensor_from({1.0, 3.0}, {2}, DType::kF64), true);
  maximum(a, b).backward(ones({2}, DType::kF64));
  EXPECT_TRUE(allclose(a.grad(), tensor_from({0.5, 0.0}, {2}, DType::kF64)));
  EXPECT_TRUE(allclose(b.grad(), tensor_from({0.5, 1.0}, {2}, DType::kF64)));
}

TEST(BinaryOp, MismatchedShapesNameTheOp) {
  Variable a(zeros({3, 4}));
  Variable b(zeros({5}));
  expect_error([&] { add(a, b); }, "add: shapes [3,4] and [5] cannot be broadcast");
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
