// The f32 gated linear attention kernel against the f64 one on the same values, forward and
// backward, including 32768-step sequences with strong gates (stability).
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "framework/backend/cpu/vector_math.h"
#include "framework/backend/fused/gated_linear_attention.h"
#include "framework/backend/fused/linear_attention.h"
#include "framework/tensor/random.h"
#include "tests/support/allclose.h"
#include "tests/support/tensor_factory.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

using rota::testing::max_relative_error;
using rota::testing::random_qkv;

// Bound on ‖f32 − f64‖∞ / ‖f64‖∞, as for the plain kernel: a wrong mask, block edge or decay
// factor gives O(1); f32 rounding of sums of a few thousand products stays near 1e-6.
constexpr double kTolerance = 2e-5;

struct FloatCase {
  int64_t b, h, n, f, d, chunk;
  bool scalar_gate;
  double low;  // gates uniform in [low, 0]
};

std::string case_name(const ::testing::TestParamInfo<FloatCase>& info) {
  const FloatCase& c = info.param;
  std::string name = "n";
  name += std::to_string(c.n);
  name += "_f";
  name += std::to_string(c.f);
  name += "_d";
  name += std::to_string(c.d);
  name += "_c";
  name += std::to_string(c.chunk);
  name += c.scalar_gate ? "_scalar" : "_channel";
  name += "_low";
  name += std::to_string(static_cast<int>(-c.low * 100));
  return name;
}

// The f32 kernel's forward and backward against the f64 kernel on the f32-rounded values.
void expect_float_matches_double(const Tensor& q, const Tensor& k, const Tensor& v,
                                 const Tensor& gate, const Tensor& grad, int64_t chunk,
                                 bool backward, double tolerance) {
  const Tensor q32 = q.to(DType::kF32), k32 = k.to(DType::kF32), v32 = v.to(DType::kF32),
               gate32 = gate.to(DType::kF32), grad32 = grad.to(DType::kF32);
  const Tensor q64 = q32.to(DType::kF64), k64 = k32.to(DType::kF64), v64 = v32.to(DType::kF64),
               gate64 = gate32.to(DType::kF64), grad64 = grad32.to(DType::kF64);
  const std::string isa = backend::vecmath::isa_name(backend::vecmath::best_isa());
  const Tensor o32 = backend::gated_linear_attention_forward(q32, k32, v32, gate32, chunk);
  for (double x : o32.to_double_vector()) ASSERT_TRUE(std::isfinite(x));
  EXPECT_LE(max_relative_error(
                o32, backend::gated_linear_attention_forward(q64, k64, v64, gate64, chunk)),
            tolerance)
      << isa;
  if (!backward) return;
  const auto got = backend::gated_linear_attention_backward(q32, k32, v32, gate32, grad32, chunk);
  const auto want = backend::gated_linear_attention_backward(q64, k64, v64, gate64, grad64, chunk);
  for (const Tensor* t : {&got.dq, &got.dk, &got.dv, &got.dlog_gate}) {
    for (double x : t->to_double_vector()) ASSERT_TRUE(std::isfinite(x));
  }
  EXPECT_LE(max_relative_error(got.dq, want.dq), tolerance) << isa << " dq";
  EXPECT_LE(max_relative_error(got.dk, want.dk), tolerance) << isa << " dk";
  EXPECT_LE(max_relative_error(got.dv, want.dv), tolerance) << isa << " dv";
  EXPECT_LE(max_relative_error(got.dlog_gate, want.dlog_gate), tolerance) << isa << " dlog_gate";
}

class GatedFloat : public ::testing::TestWithParam<FloatCase> {};

TEST_P(GatedFloat, ForwardAndBackwardMatchDouble) {
  const FloatCase c = GetParam();
  Generator gen(c.n * 7 + c.chunk + (c.scalar_gate ? 1 : 0));
  const auto [q, k, v] = random_qkv(gen, c.b, c.h, c.n, c.f, c.d);
  const Tensor gate = rand({c.b, c.h, c.n, c.scalar_gate ? 1 : c.f}, gen, c.low, 0.0, DType::kF64);
  const Tensor grad = randn({c.b, c.h, c.n, c.d}, gen, 0, 1, DType::kF64);
  expect_float_matches_double(q, k, v, gate, grad, c.chunk, true, kTolerance);
}

std::vector<FloatCase> float_cases() {
  std::vector<FloatCase> out;
  for (bool scalar : {false, true}) {
    for (double low : {-0.05, -2.0}) {
      out.push_back({2, 2, 256, 64, 64, 64, scalar, low});
      out.push_back({1, 3, 203, 17, 33, 64, scalar, low});
      out.push_back({1, 2, 300, 16, 20, 150, scalar, low});  // many sub-blocks per chunk
      out.push_back({1, 1, 37, 5, 7, 1, scalar, low});
      out.push_back({1, 2, 50, 8, 9, 128, scalar, low});
    }
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Cases, GatedFloat, ::testing::ValuesIn(float_cases()), case_name);

// Long sequences with strong gates: every exponential the kernel takes is of a value <= 0, so
// f32 stays finite and matches f64 to rounding however large the cumulative decay gets (it
// reaches e^-600000 here). Gates: "strong" uniform in [-20, -5]; "mixed" runs of 97 exact
// zeros (plain linear attention, the state never decays) between strong and weak ([-0.01, 0])
// stretches.
enum class GateKind { kStrong, kMixed };

Tensor long_gates(Generator& gen, int64_t n, int64_t width, GateKind kind) {
  const std::vector<double> strong =
      rand({n, width}, gen, -20.0, -5.0, DType::kF64).to_double_vector();
  const std::vector<double> weak =
      rand({n, width}, gen, -0.01, 0.0, DType::kF64).to_double_vector();
  std::vector<double> values(n * width);
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t x = 0; x < width; ++x) {
      const int64_t i = t * width + x;
      if (kind == GateKind::kStrong) {
        values[i] = strong[i];
      } else {
        const int64_t phase = (t / 97) % 3;
        values[i] = phase == 0 ? 0.0 : (phase == 1 ? strong[i] : weak[i]);
      }
    }
  }
  return tensor_from(values, {1, 1, n, width}, DType::kF64);
}

TEST(GatedFloatStability, LongSequenceStrongGatesStayFiniteAndMatchDouble) {
  const int64_t n = 32768, f = 16, d = 16;
  for (GateKind kind : {GateKind::kStrong, GateKind::kMixed}) {
    for (int64_t width : {f, int64_t{1}}) {
      Generator gen(static_cast<uint64_t>(width) * 3 + (kind == GateKind::kMixed ? 1 : 0));
      const auto [q, k, v] = random_qkv(gen, 1, 1, n, f, d);
      const Tensor gate = long_gates(gen, n, width, kind);
      const Tensor grad = randn({1, 1, n, d}, gen, 0, 1, DType::kF64);
      SCOPED_TRACE(std::string(kind == GateKind::kStrong ? "strong" : "mixed") +
                   (width == 1 ? " scalar" : " per-channel"));
      expect_float_matches_double(q, k, v, gate, grad, 64, true, kTolerance);
    }
  }
}

TEST(GatedFloat, ZeroGatesMatchThePlainKernel) {
  Generator gen(8);
  const auto [q, k, v] = random_qkv(gen, 2, 2, 203, 16, 24, DType::kF32);
  const Tensor grad = randn({2, 2, 203, 24}, gen);
  const Tensor plain = backend::causal_linear_attention_forward(q, k, v, 64);
  const auto plain_grads = backend::causal_linear_attention_backward(q, k, v, grad, 64);
  for (int64_t width : {int64_t{16}, int64_t{1}}) {
    const Tensor gate = zeros({2, 2, 203, width});
    EXPECT_LE(max_relative_error(backend::gated_linear_attention_forward(q, k, v, gate, 64), plain),
              kTolerance);
    const auto got = backend::gated_linear_attention_backward(q, k, v, gate, grad, 64);
    EXPECT_LE(max_relative_error(got.dq, plain_grads.dq), kTolerance);
    EXPECT_LE(max_relative_error(got.dk, plain_grads.dk), kTolerance);
    EXPECT_LE(max_relative_error(got.dv, plain_grads.dv), kTolerance);
  }
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
