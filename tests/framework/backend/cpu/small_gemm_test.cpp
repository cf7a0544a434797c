// small_gemm: every build (portable, AVX2, AVX-512) against a double-precision loop, over
// tile edges, K blocks, strided and transposed operands, and padded output rows.
#include "framework/backend/cpu/small_gemm.h"

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "framework/base/error.h"
#include "framework/tensor/random.h"
#include "tests/support/expect_error.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

using testing::expect_error;

namespace sg = backend::small_gemm;
using backend::vecmath::Isa;

struct Shape3 {
  int64_t m, n, k;
};

std::vector<Isa> supported_isas() {
  std::vector<Isa> isas;
  for (Isa isa : {Isa::kPortable, Isa::kAvx2, Isa::kAvx512}) {
    if (backend::vecmath::isa_supported(isa)) isas.push_back(isa);
  }
  return isas;
}

std::vector<float> random_floats(int64_t count, Generator& gen) {
  std::vector<float> out(count);
  for (float& x : out) x = static_cast<float>(gen.next_normal());
  return out;
}

// Checks one product: A [m, k] stored row-major or transposed, B [k, n] with padded rows,
// C [m, n] with padded rows that must stay untouched.
void check_product(Isa isa, Shape3 s, bool a_transposed, bool accumulate, Generator& gen) {
  const int64_t ldb = s.n + 3, ldc = s.n + 5;
  const std::vector<float> a = random_floats(std::max<int64_t>(s.m * s.k, 1), gen);
  const std::vector<float> b = random_floats(std::max<int64_t>(s.k * ldb, 1), gen);
  std::vector<float> c = random_floats(std::max<int64_t>(s.m * ldc, 1), gen);
  const std::vector<float> c_before = c;
  const int64_t ars = a_transposed ? 1 : s.k;  // transposed: A stored as [k, m]
  const int64_t acs = a_transposed ? s.m : 1;
  sg::GemmArgs<float> args;
  args.m = s.m;
  args.n = s.n;
  args.k = s.k;
  args.a = a.data();
  args.a_row_stride = ars;
  args.a_col_stride = acs;
  args.b = b.data();
  args.ldb = ldb;
  args.c = c.data();
  args.ldc = ldc;
  args.accumulate = accumulate;
  sg::gemm(args, isa);
  const std::string where = std::string(backend::vecmath::isa_name(isa)) +
                            " m=" + std::to_string(s.m) + " n=" + std::to_string(s.n) +
                            " k=" + std::to_string(s.k) + (a_transposed ? " Aᵀ" : " A") +
                            (accumulate ? " +=" : " =");
  for (int64_t i = 0; i < s.m; ++i) {
    for (int64_t j = 0; j < ldc; ++j) {
      const float got = c[i * ldc + j];
      if (j >= s.n) {  // padding beyond n: untouched
        ASSERT_EQ(got, c_before[i * ldc + j])
            << where << " wrote padding (" << i << "," << j << ")";
        continue;
      }
      double want = accumulate ? c_before[i * ldc + j] : 0.0;
      double magnitude = std::abs(want);
      for (int64_t p = 0; p < s.k; ++p) {
        const double term = double(a[i * ars + p * acs]) * double(b[p * ldb + j]);
        want += term;
        magnitude += std::abs(term);
      }
      // f32 accumulation of k products: error ≤ k·ε·Σ|terms| (ε = 2^-24), with margin.
      const double bound = 4.0 * (s.k + 2) * 6e-8 * magnitude + 1e-30;
      ASSERT_LE(std::abs(got - want), bound) << where << " at (" << i << "," << j << ")";
    }
  }
}

TEST(SmallGemm, EveryBuildMatchesADoubleLoop) {
  const std::vector<Shape3> shapes = {{1, 1, 1},     {6, 16, 8},   {7, 17, 5},    {5, 33, 64},
                                      {13, 64, 64},  {64, 64, 64}, {65, 70, 3},   {12, 8, 300},
                                      {3, 130, 513}, {1, 200, 1},  {64, 31, 257}, {0, 5, 4}};
  Generator gen(2026);
  for (Isa isa : supported_isas()) {
    for (const Shape3& s : shapes) {
      for (bool transposed : {false, true}) {
        for (bool accumulate : {false, true}) check_product(isa, s, transposed, accumulate, gen);
      }
    }
  }
}

TEST(SmallGemm, ZeroDepthClearsOrKeepsTheOutput) {
  for (Isa isa : supported_isas()) {
    std::vector<float> c = {1, 2, 3, 4, 5, 6};
    sg::GemmArgs<float> args;
    args.m = 2;
    args.n = 3;
    args.k = 0;
    args.ldb = 3;
    args.c = c.data();
    args.ldc = 3;
    args.accumulate = true;
    sg::gemm(args, isa);
    EXPECT_EQ(c, (std::vector<float>{1, 2, 3, 4, 5, 6})) << backend::vecmath::isa_name(isa);
    args.accumulate = false;
    sg::gemm(args, isa);
    EXPECT_EQ(c, (std::vector<float>(6, 0.0f))) << backend::vecmath::isa_name(isa);
  }
}

TEST(SmallGemm, DoubleProductMatchesTheDefinition) {
  Generator gen(7);
  const int64_t m = 9, n = 11, k = 13;
  std::vector<double> a(m * k), b(k * n), c(m * n, 0.0);
  for (double& x : a) x = gen.next_normal();
  for (double& x : b) x = gen.next_normal();
  sg::GemmArgs<double> args{m, n, k, a.data(), k, 1, b.data(), n, c.data(), n, false};
  sg::gemm(args);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double want = 0;
      for (int64_t p = 0; p < k; ++p) want += a[i * k + p] * b[p * n + j];
      EXPECT_NEAR(c[i * n + j], want, 1e-13);
    }
  }
}

TEST(SmallGemm, TransposeIntoSwapsRowsAndColumns) {
  const std::vector<float> src = {1, 2, 3, 9, 4, 5, 6, 9};  // [2, 3] with ld 4
  std::vector<float> dst(6);
  sg::transpose_into(src.data(), 2, 3, 4, dst.data());
  EXPECT_EQ(dst, (std::vector<float>{1, 4, 2, 5, 3, 6}));
}

// The f32 transpose of each build (8×8 register blocks plus element-wise edges) against the
// element loop, for sizes below, at and across block multiples, with a padded source stride.
TEST(SmallGemm, TransposeEveryBuildMatchesTheElementLoop) {
  Generator gen(5);
  for (Isa isa : {Isa::kPortable, Isa::kAvx2, Isa::kAvx512}) {
    if (!backend::vecmath::isa_supported(isa)) continue;
    for (int64_t rows : {0, 1, 7, 8, 9, 16, 31, 64, 65}) {
      for (int64_t cols : {1, 5, 8, 15, 24, 64, 67}) {
        const int64_t ld = cols + 3;
        const Tensor src_t = randn({std::max<int64_t>(rows, 1) * ld}, gen);
        const float* src = src_t.data<float>();
        std::vector<float> want(rows * cols), got(rows * cols + 1, -1.0f);
        sg::transpose_into<float>(src, rows, cols, ld, want.data());
        sg::transpose_into(src, rows, cols, ld, got.data(), isa);
        EXPECT_EQ(got.back(), -1.0f) << "wrote past the end";
        got.pop_back();
        ASSERT_EQ(got, want) << backend::vecmath::isa_name(isa) << " " << rows << "x" << cols;
      }
    }
  }
}

TEST(SmallGemm, BadSizesAreRejected) {
  sg::GemmArgs<float> args;
  args.m = 2;
  args.n = 4;
  args.k = 1;
  args.ldb = 3;  // shorter than a row of B
  args.ldc = 4;
  EXPECT_THROW(sg::gemm(args, Isa::kPortable), Error);
}

// ROTA_MAX_CPU_ISA caps the run-time choice; restored afterwards.
class MaxIsaEnvironment : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* old = std::getenv("ROTA_MAX_CPU_ISA");
    had_ = old != nullptr;
    if (had_) old_ = old;
  }
  void TearDown() override {
    if (had_) {
      setenv("ROTA_MAX_CPU_ISA", old_.c_str(), 1);
    } else {
      unsetenv("ROTA_MAX_CPU_ISA");
    }
  }
  bool had_ = false;
  std::string old_;
};

TEST_F(MaxIsaEnvironment, CapsTheChoiceAndRejectsUnknownNames) {
  setenv("ROTA_MAX_CPU_ISA", "portable", 1);
  EXPECT_EQ(backend::vecmath::best_isa(), Isa::kPortable);
  setenv("ROTA_MAX_CPU_ISA", "avx2", 1);
  EXPECT_EQ(backend::vecmath::best_isa(),
            backend::vecmath::isa_supported(Isa::kAvx2) ? Isa::kAvx2 : Isa::kPortable);
  unsetenv("ROTA_MAX_CPU_ISA");
  EXPECT_EQ(backend::vecmath::max_isa_from_environment(), Isa::kAvx512);
  setenv("ROTA_MAX_CPU_ISA", "sse9", 1);
  expect_error([&] { backend::vecmath::best_isa(); }, "ROTA_MAX_CPU_ISA=sse9");
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
