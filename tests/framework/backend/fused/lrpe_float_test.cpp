// The fused LRPE kernels at the head sizes and row counts the vector paths specialise: f64
// against a reference written from lrpe.md, and f32 (the vector build this CPU runs, or the one
// ROTA_MAX_CPU_ISA picks) against f64 on the same values, for every core × P × pairing.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "framework/backend/cpu/parallel.h"
#include "framework/backend/cpu/vector_math.h"
#include "framework/backend/fused/lrpe.h"
#include "framework/backend/primitives/elementwise.h"
#include "framework/tensor/random.h"
#include "tests/framework/backend/fused/lrpe_variants.h"
#include "tests/support/allclose.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

using rota::testing::max_relative_error;

using backend::LrpeCore;
using backend::LrpeKernelConfig;
using backend::LrpeP;
using backend::LrpePairing;

using Variant = testing::LrpeVariant;
using testing::variant_name;

// Shapes: odd and even D, the D the kernels compile as constants (32, 64, 128), N prime, and
// enough rows (G·N up to 1,535) that each of the 64 gradient blocks spans several 8-row tiles
// and 16-row flushes with a partial tail.
struct Case {
  int64_t d, g, n, offset;
};
const Case kShapes[] = {{7, 3, 37, 5},      {10, 2, 601, 0}, {13, 4, 257, 2},
                        {32, 3, 409, 1000}, {64, 5, 307, 3}, {128, 2, 523, 77}};

// Inputs in f64 whose values are exactly representable in f32 (rounded once), so the f32 and
// f64 kernels see the same numbers.
struct Inputs {
  Tensor x, grad_y, theta, w, perm;  // f64 (perm i64)
  LrpeKernelConfig config;
  int64_t d = 0, f = 0, m = 0;
};

Tensor round_to_f32(const Tensor& t) {
  return t.to(DType::kF32).to(DType::kF64);
}

Inputs make_inputs(const Variant& v, const Case& s, uint64_t seed) {
  Generator gen(seed);
  Inputs in;
  in.d = s.d;
  in.f = backend::lrpe_output_dim(v.core, s.d);
  in.m = v.core == LrpeCore::kUnitary ? s.d : (v.core == LrpeCore::kOrthogonal ? s.d / 2 : 0);
  in.config.core = v.core;
  in.config.pairing = v.pairing;
  in.config.p = v.p;
  in.config.offset = s.offset;
  in.x = round_to_f32(randn({s.g, s.n, s.d}, gen, 0, 1, DType::kF64));
  in.grad_y = round_to_f32(randn({s.g, s.n, in.f}, gen, 0, 1, DType::kF64));
  if (v.core != LrpeCore::kPermutation) {
    std::vector<double> th(in.m);
    for (int64_t k = 0; k < in.m; ++k)
      th[k] = std::pow(10000.0, -2.0 * k / s.d) + 0.1 * gen.next_double();
    in.theta = round_to_f32(tensor_from(th, {in.m}, DType::kF64));
  } else {
    in.perm = randperm(s.d, gen);
  }
  if (v.p == LrpeP::kHouseholder) {
    std::vector<double> w(s.d);
    double norm = 0;
    for (auto& e : w) {
      e = gen.next_normal();
      norm += e * e;
    }
    for (auto& e : w) e /= std::sqrt(norm);
    in.w = round_to_f32(tensor_from(w, {s.d}, DType::kF64));
  }
  return in;
}

Tensor as_f32(const Tensor& t) {
  return t.defined() ? t.to(DType::kF32) : Tensor();
}

// ---- f64 reference from lrpe.md sections 3, 4 and 6, one row at a time ----

struct Reference {
  std::vector<double> y, dx, dtheta, dw;
};

Reference reference(const Variant& v, const Inputs& in) {
  const int64_t d = in.d, f = in.f, m = in.m;
  const std::vector<double> xs = in.x.to_double_vector();
  const std::vector<double> gs = in.grad_y.to_double_vector();
  const int64_t n = in.x.size(1);
  const int64_t rows = in.x.numel() / d;
  const std::vector<double> th =
      in.theta.defined() ? in.theta.to_double_vector() : std::vector<double>();
  const std::vector<double> w = in.w.defined() ? in.w.to_double_vector() : std::vector<double>();
  const std::vector<double> pi =
      in.perm.defined() ? in.perm.to_double_vector() : std::vector<double>();
  Reference out;
  out.y.assign(rows * f, 0);
  out.dx.assign(rows * d, 0);
  out.dtheta.assign(m, 0);
  out.dw.assign(d, 0);
  const int64_t h = (d + 1) / 2;
  auto odd_even_source = [&](int64_t j) { return j % 2 == 0 ? j / 2 : h + (j - 1) / 2; };
  // idx_s for Type 3 (idx_0 = identity, idx_s[j] = idx_{s-1}[π[j]]), per position.
  std::vector<std::vector<int64_t>> idx_of_position(n);
  if (v.core == LrpeCore::kPermutation) {
    std::vector<int64_t> idx(d);
    for (int64_t j = 0; j < d; ++j) idx[j] = j;
    for (int64_t s = 0; s < in.config.offset + n; ++s) {
      if (s >= in.config.offset) idx_of_position[s - in.config.offset] = idx;
      std::vector<int64_t> next(d);
      for (int64_t j = 0; j < d; ++j) next[j] = idx[static_cast<int64_t>(pi[j])];
      idx = next;
    }
  }
  for (int64_t row = 0; row < rows; ++row) {
    const double pos = static_cast<double>(in.config.offset + row % n);
    const double* x = xs.data() + row * d;
    const double* gy = gs.data() + row * f;
    // u = P x
    std::vector<double> u(d);
    double xw = 0;
    for (int64_t j = 0; j < d; ++j) {
      if (v.p == LrpeP::kIdentity) u[j] = x[j];
      if (v.p == LrpeP::kOddEven) u[j] = x[odd_even_source(j)];
    }
    if (v.p == LrpeP::kHouseholder) {
      for (int64_t j = 0; j < d; ++j) xw += x[j] * w[j];
      for (int64_t j = 0; j < d; ++j) u[j] = x[j] - 2 * xw * w[j];
    }
    // y = Λ(s) u, gu = Λ(s)ᵀ gy, θ's gradient
    double* y = out.y.data() + row * f;
    std::vector<double> gu(d);
    if (v.core == LrpeCore::kUnitary) {
      for (int64_t j = 0; j < d; ++j) {
        const double c = std::cos(pos * th[j]), s = std::sin(pos * th[j]);
        y[j] = u[j] * c;
        y[d + j] = u[j] * s;
        gu[j] = gy[j] * c + gy[d + j] * s;
        out.dtheta[j] += pos * (gy[d + j] * y[j] - gy[j] * y[d + j]);
      }
    } else if (v.core == LrpeCore::kOrthogonal) {
      for (int64_t j = 0; j < d; ++j) {
        y[j] = u[j];  // the odd last channel passes through
        gu[j] = gy[j];
      }
      for (int64_t k = 0; k < m; ++k) {
        const int64_t i0 = v.pairing == LrpePairing::kAdjacent ? 2 * k : k;
        const int64_t i1 = v.pairing == LrpePairing::kAdjacent ? 2 * k + 1 : k + m;
        const double c = std::cos(pos * th[k]), s = std::sin(pos * th[k]);
        y[i0] = u[i0] * c - u[i1] * s;
        y[i1] = u[i0] * s + u[i1] * c;
        gu[i0] = gy[i0] * c + gy[i1] * s;
        gu[i1] = -gy[i0] * s + gy[i1] * c;
        out.dtheta[k] += pos * (gy[i1] * y[i0] - gy[i0] * y[i1]);
      }
    } else {
      const std::vector<int64_t>& idx = idx_of_position[row % n];
      for (int64_t j = 0; j < d; ++j) {
        y[j] = u[idx[j]];
        gu[idx[j]] = gy[j];
      }
    }
    // gx = Pᵀ gu, w's gradient
    double* gx = out.dx.data() + row * d;
    if (v.p == LrpeP::kIdentity) {
      for (int64_t j = 0; j < d; ++j) gx[j] = gu[j];
    } else if (v.p == LrpeP::kOddEven) {
      for (int64_t j = 0; j < d; ++j) gx[odd_even_source(j)] = gu[j];
    } else {
      double guw = 0;
      for (int64_t j = 0; j < d; ++j) guw += gu[j] * w[j];
      for (int64_t j = 0; j < d; ++j) {
        gx[j] = gu[j] - 2 * guw * w[j];
        out.dw[j] += -2 * (xw * gu[j] + guw * x[j]);
      }
    }
  }
  return out;
}

class LrpeVariants : public ::testing::TestWithParam<Variant> {};

// The f64 kernels (whose loops are the f32 ones instantiated for double) against the
// reference. Only summation order differs: ~1e-15 relative, 1e-12 leaves room for the
// cancellation in θ's gradient (a sum over ~1,500 rows of terms of both signs).
TEST_P(LrpeVariants, DoubleKernelsMatchReference) {
  const Variant v = GetParam();
  constexpr double kTolerance = 1e-12;
  for (const Case& s : kShapes) {
    const Inputs in = make_inputs(v, s, 100 + s.d);
    const Reference want = reference(v, in);
    const int64_t rows = s.g * s.n;
    const std::string where = "D=" + std::to_string(s.d);
    const Tensor y = backend::lrpe_forward(in.config, in.x, in.theta, in.w, in.perm);
    EXPECT_LE(max_relative_error(y, tensor_from(want.y, {rows, in.f}, DType::kF64)), kTolerance)
        << where << " y";
    const auto grads = backend::lrpe_backward(in.config, in.x, in.theta, in.w, in.perm, in.grad_y);
    EXPECT_LE(max_relative_error(grads.dx, tensor_from(want.dx, {rows, s.d}, DType::kF64)),
              kTolerance)
        << where << " dx";
    if (v.core != LrpeCore::kPermutation) {
      EXPECT_LE(max_relative_error(grads.dtheta, tensor_from(want.dtheta, {in.m}, DType::kF64)),
                kTolerance)
          << where << " dtheta";
    }
    if (v.p == LrpeP::kHouseholder) {
      EXPECT_LE(max_relative_error(grads.dw, tensor_from(want.dw, {s.d}, DType::kF64)), kTolerance)
          << where << " dw";
    }
  }
}

// f32 against f64 on the same (f32-representable) inputs, errors as ‖Δ‖∞ / ‖f64‖∞.
// Error budget, u = 2^-24:
// - y, dx: each element is a rotation (2 products and a sum, ~3u) of u = P x, whose
//   Householder dot x·w sums D <= 128 products, with cos / sin table entries rounded from f64
//   (u). Worst case |Δ| <= ~(2D + 8)·u·‖x_row‖ (1.6e-5·‖x_row‖ for D = 128); errors of
//   independent sign grow like √D, so ~(√D + 8)·u ≈ 1e-6 is what to expect.
// - dθ, dw: sums over all rows of pos·(products of the above), in f32 partial sums of at most
//   16 rows flushed into f64: per term ~(√D + 8)·u as above plus ~√16·u from the partials,
//   relative to Σ|terms|, and the same for the result: the errors of the terms are
//   independent like the terms themselves, so both sums grow like √rows.
// Largest seen over every variant, shape and build: 2.2e-7. Tolerances 1e-5 (values) and
// 5e-5 (sums) are 50x and 200x above it and below what a bug gives: a wrong pair, sign or
// table row is O(1); a position weight off by one is >= 1 / (offset + N) ≈ 1e-3 here.
constexpr double kValueTolerance = 1e-5;
constexpr double kSumTolerance = 5e-5;

void expect_float_matches_double(const Variant& v, const Inputs& in, const std::string& where) {
  const std::string isa = backend::vecmath::isa_name(backend::vecmath::best_isa());
  const Tensor x32 = as_f32(in.x), g32 = as_f32(in.grad_y), th32 = as_f32(in.theta),
               w32 = as_f32(in.w);
  const Tensor y32 = backend::lrpe_forward(in.config, x32, th32, w32, in.perm);
  const Tensor y64 = backend::lrpe_forward(in.config, in.x, in.theta, in.w, in.perm);
  ASSERT_EQ(y32.dtype(), DType::kF32);
  EXPECT_LE(max_relative_error(y32, y64), kValueTolerance) << isa << " " << where << " y";
  const auto got = backend::lrpe_backward(in.config, x32, th32, w32, in.perm, g32);
  const auto want = backend::lrpe_backward(in.config, in.x, in.theta, in.w, in.perm, in.grad_y);
  EXPECT_LE(max_relative_error(got.dx, want.dx), kValueTolerance) << isa << " " << where << " dx";
  if (v.core != LrpeCore::kPermutation) {
    ASSERT_EQ(got.dtheta.dtype(), DType::kF32);
    EXPECT_LE(max_relative_error(got.dtheta, want.dtheta), kSumTolerance)
        << isa << " " << where << " dtheta";
  }
  if (v.p == LrpeP::kHouseholder) {
    ASSERT_EQ(got.dw.dtype(), DType::kF32);
    EXPECT_LE(max_relative_error(got.dw, want.dw), kSumTolerance) << isa << " " << where << " dw";
  }
}

TEST_P(LrpeVariants, LrpeFloatMatchesDouble) {
  const Variant v = GetParam();
  for (const Case& s : kShapes) {
    expect_float_matches_double(v, make_inputs(v, s, 200 + s.d), "D=" + std::to_string(s.d));
  }
}

// The feature map fused in (config.input_one_plus_elu) on the head view linear attention passes
// ([G, N, D] rows of a wider [N, G, 3D] projection): the bits of one_plus_elu then the plain
// kernel, forward and all three gradients; dx stored in the view's layout. The plain kernel
// reads the view in place with the bits of its contiguous copy. f64 and f32 (this CPU's build).
TEST_P(LrpeVariants, LrpeFloatFeatureMapFusedIsTheComposedOps) {
  using backend::UnaryOp;
  const Variant v = GetParam();
  for (const Case& s : {kShapes[0], kShapes[3], kShapes[4]}) {
    const Inputs in = make_inputs(v, s, 300 + s.d);
    Generator gen(400 + s.d);
    const Tensor wide = randn({s.n, s.g, 3 * s.d}, gen, 0, 1.5, DType::kF64);
    for (DType dtype : {DType::kF64, DType::kF32}) {
      const std::string where =
          variant_name(v) + " D=" + std::to_string(s.d) + " " + dtype_name(dtype);
      const Tensor x = wide.to(dtype).narrow(2, s.d, s.d).permute({1, 0, 2});  // [G, N, D]
      ASSERT_FALSE(x.is_contiguous());
      const Tensor theta = in.theta.defined() ? in.theta.to(dtype) : Tensor();
      const Tensor w = in.w.defined() ? in.w.to(dtype) : Tensor();
      const Tensor g = in.grad_y.to(dtype);
      LrpeKernelConfig fused = in.config;
      fused.input_one_plus_elu = true;
      const auto same = [](const Tensor& a, const Tensor& b) {
        return a.defined() == b.defined() &&
               (!a.defined() || a.to_double_vector() == b.to_double_vector());
      };
      // Plain kernel: the view in place = its contiguous copy.
      EXPECT_TRUE(same(backend::lrpe_forward(in.config, x, theta, w, in.perm),
                       backend::lrpe_forward(in.config, x.contiguous(), theta, w, in.perm)))
          << where;
      const Tensor phi = backend::unary(UnaryOp::kOnePlusElu, x);
      EXPECT_TRUE(same(backend::lrpe_forward(fused, x, theta, w, in.perm),
                       backend::lrpe_forward(in.config, phi, theta, w, in.perm)))
          << where;
      const auto composed = backend::lrpe_backward(in.config, phi, theta, w, in.perm, g);
      const Tensor composed_dx = backend::unary_backward(UnaryOp::kOnePlusElu, x, phi, composed.dx);
      const auto grads = backend::lrpe_backward(fused, x, theta, w, in.perm, g);
      EXPECT_TRUE(same(grads.dx, composed_dx)) << where << " dx";
      EXPECT_TRUE(same(grads.dtheta, composed.dtheta)) << where << " dtheta";
      EXPECT_TRUE(same(grads.dw, composed.dw)) << where << " dw";
      EXPECT_TRUE(grads.dx.permute({1, 0, 2}).is_contiguous()) << where << " dx layout";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(All, LrpeVariants, ::testing::ValuesIn(testing::all_lrpe_variants()),
                         [](const ::testing::TestParamInfo<Variant>& info) {
                           return variant_name(info.param);
                         });

// Positions far out: f32 tables come from the vectorised cos / sin while every |s·θ| is below
// 1.6e6 rad (range reduction by multiples of π/2 up to 2^20 of them) and from libm above; the
// f64 kernels always use libm, so both sides of the switch are checked against it.
TEST(LrpeFloatLongPositions, TablesNearAndBeyondTheFastRangeMatchDouble) {
  for (const Variant v :
       {Variant{LrpeCore::kOrthogonal, LrpePairing::kAdjacent, LrpeP::kHouseholder},
        Variant{LrpeCore::kUnitary, LrpePairing::kAdjacent, LrpeP::kIdentity}}) {
    for (int64_t offset : {1'500'000, 3'000'000}) {
      Inputs in = make_inputs(v, {64, 2, 100, offset}, 7);
      // θ_0 ≈ 1 (+ up to 0.1): angles reach ~1.6e6 and ~3.3e6.
      expect_float_matches_double(v, in, variant_name(v) + " offset " + std::to_string(offset));
    }
  }
}

// The θ / w gradients are summed in a fixed block split, so they do not depend on the number
// of threads: bit-for-bit equal with 1 and 2 threads.
TEST(LrpeFloatThreads, GradientsDoNotDependOnTheThreadCount) {
  const Variant v{LrpeCore::kOrthogonal, LrpePairing::kAdjacent, LrpeP::kHouseholder};
  const Inputs in = make_inputs(v, {64, 5, 307, 3}, 11);
  const Tensor x32 = as_f32(in.x), g32 = as_f32(in.grad_y), th32 = as_f32(in.theta),
               w32 = as_f32(in.w);
  const int saved = backend::num_threads();
  backend::set_num_threads(1);
  const auto one = backend::lrpe_backward(in.config, x32, th32, w32, in.perm, g32);
  backend::set_num_threads(2);
  const auto two = backend::lrpe_backward(in.config, x32, th32, w32, in.perm, g32);
  backend::set_num_threads(saved);
  EXPECT_EQ(one.dtheta.to_double_vector(), two.dtheta.to_double_vector());
  EXPECT_EQ(one.dw.to_double_vector(), two.dw.to_double_vector());
  EXPECT_EQ(one.dx.to_double_vector(), two.dx.to_double_vector());
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
