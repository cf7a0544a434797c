// Fused LRPE kernel: spec reference, relative property, unitarity, P-dropping, offsets.
#include <cmath>
#include <string>

#include <gtest/gtest.h>

#include "framework/backend/fused/lrpe.h"
#include "framework/tensor/random.h"
#include "tests/framework/backend/fused/lrpe_variants.h"
#include "tests/support/allclose.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

using backend::LrpeCore;
using backend::LrpeKernelConfig;
using backend::LrpeP;
using backend::LrpePairing;
using testing::allclose;

using Variant = testing::LrpeVariant;
using testing::variant_name;

// Parameters for head dimension d, all in f64.
struct Params {
  Tensor theta, w, perm;
};

Params make_params(const Variant& v, int64_t d, Generator& gen) {
  Params p;
  const int64_t m = v.core == LrpeCore::kUnitary ? d : d / 2;
  if (v.core != LrpeCore::kPermutation) {
    std::vector<double> th(m);
    for (int64_t j = 0; j < m; ++j)
      th[j] = std::pow(10000.0, -2.0 * j / d) + 0.1 * gen.next_double();
    p.theta = tensor_from(th, {m}, DType::kF64);
  } else {
    p.perm = randperm(d, gen);
  }
  if (v.p == LrpeP::kHouseholder) {
    std::vector<double> w(d);
    double norm = 0;
    for (auto& x : w) {
      x = gen.next_normal();
      norm += x * x;
    }
    for (auto& x : w) x /= std::sqrt(norm);
    p.w = tensor_from(w, {d}, DType::kF64);
  }
  return p;
}

// Spec reference for one row (lrpe.md sections 3 and 4), written from the formulas.
std::vector<double> reference_row(const Variant& v, const Params& p, const std::vector<double>& x,
                                  int64_t s) {
  const int64_t d = static_cast<int64_t>(x.size());
  std::vector<double> u(d);
  if (v.p == LrpeP::kIdentity) u = x;
  if (v.p == LrpeP::kHouseholder) {
    const std::vector<double> w = p.w.to_double_vector();
    double xw = 0;
    for (int64_t j = 0; j < d; ++j) xw += x[j] * w[j];
    for (int64_t j = 0; j < d; ++j) u[j] = x[j] - 2 * xw * w[j];
  }
  if (v.p == LrpeP::kOddEven) {
    const int64_t h = (d + 1) / 2;
    for (int64_t k = 0; 2 * k < d; ++k) u[2 * k] = x[k];
    for (int64_t k = 0; 2 * k + 1 < d; ++k) u[2 * k + 1] = x[h + k];
  }
  if (v.core == LrpeCore::kUnitary) {
    const std::vector<double> th = p.theta.to_double_vector();
    std::vector<double> y(2 * d);
    for (int64_t j = 0; j < d; ++j) {
      y[j] = u[j] * std::cos(s * th[j]);
      y[d + j] = u[j] * std::sin(s * th[j]);
    }
    return y;
  }
  if (v.core == LrpeCore::kOrthogonal) {
    const std::vector<double> th = p.theta.to_double_vector();
    std::vector<double> y = u;  // an odd last channel passes through
    const int64_t m = d / 2;
    for (int64_t k = 0; k < m; ++k) {
      const int64_t i0 = v.pairing == LrpePairing::kAdjacent ? 2 * k : k;
      const int64_t i1 = v.pairing == LrpePairing::kAdjacent ? 2 * k + 1 : k + m;
      y[i0] = u[i0] * std::cos(s * th[k]) - u[i1] * std::sin(s * th[k]);
      y[i1] = u[i0] * std::sin(s * th[k]) + u[i1] * std::cos(s * th[k]);
    }
    return y;
  }
  // Type 3: idx_0 = identity, idx_s[j] = idx_{s-1}[π[j]], y[j] = u[idx_s[j]].
  const std::vector<double> pi = p.perm.to_double_vector();
  std::vector<int64_t> idx(d);
  for (int64_t j = 0; j < d; ++j) idx[j] = j;
  for (int64_t step = 0; step < s; ++step) {
    std::vector<int64_t> next(d);
    for (int64_t j = 0; j < d; ++j) next[j] = idx[static_cast<int64_t>(pi[j])];
    idx = next;
  }
  std::vector<double> y(d);
  for (int64_t j = 0; j < d; ++j) y[j] = u[idx[j]];
  return y;
}

LrpeKernelConfig config_of(const Variant& v, int64_t offset = 0) {
  LrpeKernelConfig c;
  c.core = v.core;
  c.pairing = v.pairing;
  c.p = v.p;
  c.offset = offset;
  return c;
}

Tensor run(const Variant& v, const Params& p, const Tensor& x, int64_t offset = 0) {
  return backend::lrpe_forward(config_of(v, offset), x, p.theta, p.w, p.perm);
}

class LrpeKernel : public ::testing::TestWithParam<Variant> {};

TEST_P(LrpeKernel, ForwardMatchesSpecReference) {
  const Variant v = GetParam();
  for (int64_t d : {6, 7}) {  // even and odd head dimension
    Generator gen(d);
    const Params p = make_params(v, d, gen);
    const int64_t g = 3, n = 9, offset = 4;
    const Tensor x = randn({g, n, d}, gen, 0, 1, DType::kF64);
    const Tensor y = run(v, p, x, offset);
    const int64_t f = backend::lrpe_output_dim(v.core, d);
    ASSERT_EQ(y.shape(), (Shape{g, n, f}));
    std::vector<double> expected;
    for (int64_t gi = 0; gi < g; ++gi) {
      for (int64_t s = 0; s < n; ++s) {
        std::vector<double> row(d);
        for (int64_t j = 0; j < d; ++j) row[j] = x.at({gi, s, j});
        for (double e : reference_row(v, p, row, s + offset)) expected.push_back(e);
      }
    }
    EXPECT_TRUE(allclose(y, tensor_from(expected, {g, n, f}, DType::kF64), 1e-12, 1e-12))
        << "D=" << d;
  }
}

TEST_P(LrpeKernel, ScoresDependOnlyOnRelativePosition) {
  // With the same q at every position and the same k at every position, q̃_s·k̃_t must be a
  // function of t − s alone: the score matrix is Toeplitz.
  const Variant v = GetParam();
  const int64_t d = 8, n = 12;
  Generator gen(21);
  const Params p = make_params(v, d, gen);
  const Tensor q = randn({1, 1, d}, gen, 0, 1, DType::kF64).expand({1, n, d});
  const Tensor k = randn({1, 1, d}, gen, 0, 1, DType::kF64).expand({1, n, d});
  const Tensor qt = run(v, p, q);
  const Tensor kt = run(v, p, k);
  const int64_t f = qt.size(-1);
  auto score = [&](int64_t s, int64_t t) {
    double acc = 0;
    for (int64_t j = 0; j < f; ++j) acc += qt.at({0, s, j}) * kt.at({0, t, j});
    return acc;
  };
  for (int64_t s = 0; s + 1 < n; ++s) {
    for (int64_t t = 0; t + 1 < n; ++t) {
      EXPECT_NEAR(score(s, t), score(s + 1, t + 1), 1e-10) << "s=" << s << " t=" << t;
    }
  }
}

TEST_P(LrpeKernel, TransformIsNormPreserving) {
  // W_s is unitary: ‖y_s‖ = ‖x_s‖ for every row (Type 1: ‖[u cos, u sin]‖ = ‖u‖).
  const Variant v = GetParam();
  Generator gen(4);
  const int64_t d = 7;
  const Params p = make_params(v, d, gen);
  const Tensor x = randn({2, 10, d}, gen, 0, 1, DType::kF64);
  const Tensor y = run(v, p, x, 3);
  for (int64_t g = 0; g < 2; ++g) {
    for (int64_t s = 0; s < 10; ++s) {
      double nx = 0, ny = 0;
      for (int64_t j = 0; j < d; ++j) nx += x.at({g, s, j}) * x.at({g, s, j});
      for (int64_t j = 0; j < y.size(-1); ++j) ny += y.at({g, s, j}) * y.at({g, s, j});
      EXPECT_NEAR(nx, ny, 1e-10);
    }
  }
}

TEST_P(LrpeKernel, DroppingTrailingPTransposeIsExact) {
  // Scores from the full W_s = Pᵀ Λ(s) P equal scores from Λ(s) P (the kernel's form).
  // For Type 1 the real layout [Re, Im] takes Pᵀ on each half.
  const Variant v = GetParam();
  const int64_t d = 6, n = 5;
  Generator gen(8);
  const Params p = make_params(v, d, gen);
  const Tensor q = randn({1, n, d}, gen, 0, 1, DType::kF64);
  const Tensor k = randn({1, n, d}, gen, 0, 1, DType::kF64);
  const Tensor qt = run(v, p, q);
  const Tensor kt = run(v, p, k);
  const int64_t f = qt.size(-1);
  // Pᵀ (block-wise for Type 1: Pᵀ on each D-half) applied to a transformed row.
  auto apply_pt = [&](const Tensor& y, int64_t s) {
    std::vector<double> out(f);
    for (int64_t half = 0; half < f / d; ++half) {
      std::vector<double> row(d);
      for (int64_t j = 0; j < d; ++j) row[j] = y.at({0, s, half * d + j});
      std::vector<double> res(d);
      if (v.p == LrpeP::kIdentity) res = row;
      if (v.p == LrpeP::kHouseholder) {  // P symmetric
        const std::vector<double> w = p.w.to_double_vector();
        double rw = 0;
        for (int64_t j = 0; j < d; ++j) rw += row[j] * w[j];
        for (int64_t j = 0; j < d; ++j) res[j] = row[j] - 2 * rw * w[j];
      }
      if (v.p == LrpeP::kOddEven) {  // Pᵀ: x[idx[j]] = u[j]
        const int64_t h = (d + 1) / 2;
        for (int64_t j = 0; j < d; ++j) res[j % 2 == 0 ? j / 2 : h + (j - 1) / 2] = row[j];
      }
      for (int64_t j = 0; j < d; ++j) out[half * d + j] = res[j];
    }
    return out;
  };
  for (int64_t s = 0; s < n; ++s) {
    for (int64_t t = 0; t < n; ++t) {
      const std::vector<double> a = apply_pt(qt, s), b = apply_pt(kt, t);
      double full = 0, dropped = 0;
      for (int64_t j = 0; j < f; ++j) {
        full += a[j] * b[j];
        dropped += qt.at({0, s, j}) * kt.at({0, t, j});
      }
      EXPECT_NEAR(full, dropped, 1e-10);
    }
  }
}

TEST_P(LrpeKernel, OffsetContinuesPositions) {
  const Variant v = GetParam();
  Generator gen(12);
  const int64_t d = 8;
  const Params p = make_params(v, d, gen);
  const Tensor x = randn({2, 10, d}, gen, 0, 1, DType::kF64);
  const Tensor whole = run(v, p, x);
  const Tensor tail = run(v, p, x.slice(1, 6, 10), /*offset=*/6);
  EXPECT_TRUE(allclose(tail, whole.slice(1, 6, 10), 1e-12, 1e-12));
}

TEST_P(LrpeKernel, FloatMatchesDouble) {
  const Variant v = GetParam();
  Generator gen(13);
  const int64_t d = 8;
  const Params p = make_params(v, d, gen);
  const Tensor x = randn({2, 40, d}, gen, 0, 1, DType::kF64);
  Params p32 = p;
  if (p.theta.defined()) p32.theta = p.theta.to(DType::kF32);
  if (p.w.defined()) p32.w = p.w.to(DType::kF32);
  EXPECT_TRUE(
      allclose(run(v, p32, x.to(DType::kF32), 100), run(v, p, x, 100).to(DType::kF32), 1e-4, 1e-5));
}

INSTANTIATE_TEST_SUITE_P(Variants, LrpeKernel, ::testing::ValuesIn(testing::all_lrpe_variants()),
                         [](const ::testing::TestParamInfo<Variant>& info) {
                           return variant_name(info.param);
                         });

TEST(LrpePermutationPowers, AnyLengthMatchesRepeatedApplication) {
  Generator gen(2);
  const Tensor perm = randperm(10, gen);
  const std::vector<double> pi = perm.to_double_vector();
  const int64_t offset = 1000, n = 40;  // far beyond the reference's 512-row table
  const std::vector<int64_t> table = backend::permutation_power_table(perm, offset, n);
  std::vector<int64_t> idx(10);
  for (int64_t j = 0; j < 10; ++j) idx[j] = j;
  for (int64_t s = 0; s < offset + n; ++s) {
    if (s >= offset) {
      for (int64_t j = 0; j < 10; ++j) ASSERT_EQ(table[(s - offset) * 10 + j], idx[j]) << s;
    }
    std::vector<int64_t> next(10);
    for (int64_t j = 0; j < 10; ++j) next[j] = idx[static_cast<int64_t>(pi[j])];
    idx = next;
  }
}

TEST(LrpeKernelErrors, BadParametersNameTheOp) {
  LrpeKernelConfig c;  // Type 2 + Householder
  const Tensor x = zeros({2, 5, 8});
  try {
    backend::lrpe_forward(c, x, zeros({3}), zeros({8}), Tensor());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("lrpe: theta must be [4]"), std::string::npos) << e.what();
  }
  c.core = LrpeCore::kPermutation;
  EXPECT_THROW(backend::lrpe_forward(c, x, Tensor(), zeros({8}),
                                     tensor_from({0, 1, 2, 3, 4, 5, 6, 6}, {8}, DType::kI64)),
               Error);
}

// Zero positions (N = 0) or zero slices: empty outputs and dx, zero θ / w gradients, no crash
// (the row loops derive the position as row % N).
TEST(LrpeKernelEmpty, NoRowsGiveEmptyResultsAndZeroParameterGradients) {
  LrpeKernelConfig c;  // Type 2 + Householder
  const Tensor theta = full({4}, 0.5), w = full({8}, 0.25);
  for (const Shape& shape : {Shape{2, 0, 8}, Shape{0, 5, 8}}) {
    for (bool fused : {false, true}) {
      c.input_one_plus_elu = fused;
      const Tensor x = zeros(shape);
      EXPECT_EQ(backend::lrpe_forward(c, x, theta, w, Tensor()).shape(), shape);
      const auto grads = backend::lrpe_backward(c, x, theta, w, Tensor(), zeros(shape));
      EXPECT_EQ(grads.dx.shape(), shape);
      EXPECT_EQ(grads.dtheta.to_double_vector(), std::vector<double>(4, 0.0));
      EXPECT_EQ(grads.dw.to_double_vector(), std::vector<double>(8, 0.0));
    }
  }
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
