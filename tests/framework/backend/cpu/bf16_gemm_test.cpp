// gemm_bf16: every unit this CPU runs (emulated, AVX512-BF16, AMX) against a double-precision
// sum of the bf16-rounded operands, over tile and pair edges, strided and transposed operands.
#include "framework/backend/cpu/bf16_gemm.h"

#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "framework/base/error.h"
#include "framework/tensor/dtype.h"
#include "framework/tensor/random.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

namespace sg = backend::small_gemm;
using sg::Bf16Unit;

std::vector<Bf16Unit> supported_units() {
  std::vector<Bf16Unit> units;
  for (Bf16Unit unit : {Bf16Unit::kEmulated, Bf16Unit::kAvx512Bf16, Bf16Unit::kAmx}) {
    if (sg::bf16_unit_supported(unit)) units.push_back(unit);
  }
  return units;
}

double as_bf16(float x) {
  return static_cast<double>(bf16_to_float(float_to_bf16(x)));
}

enum class Layout { kRowMajor, kTransposed, kStrided };

struct Case {
  int64_t m, n, k;
};

// A [m, k] stored row-major, transposed ([k, m]) or with both strides > 1; B [k, n] and C [m, n]
// with padded rows (C's padding must stay untouched).
void check_product(Bf16Unit unit, Case s, Layout layout, bool accumulate, Generator& gen) {
  const int64_t ldb = s.n + 3, ldc = s.n + 5;
  int64_t ars = s.k, acs = 1, a_size = s.m * s.k;
  if (layout == Layout::kTransposed) {
    ars = 1;
    acs = s.m;
  } else if (layout == Layout::kStrided) {
    ars = 2 * s.k + 1;
    acs = 2;
    a_size = s.m * ars;
  }
  std::vector<float> a(std::max<int64_t>(a_size, 1)), b(std::max<int64_t>(s.k * ldb, 1));
  std::vector<float> c(std::max<int64_t>(s.m * ldc, 1));
  for (float& x : a) x = static_cast<float>(gen.next_normal());
  for (float& x : b) x = static_cast<float>(gen.next_normal());
  for (float& x : c) x = static_cast<float>(gen.next_normal());
  const std::vector<float> c_before = c;
  sg::GemmArgs<float> args{s.m,      s.n, s.k,      a.data(), ars,       acs,
                           b.data(), ldb, c.data(), ldc,      accumulate};
  sg::gemm_bf16(args, unit);
  const std::string where = std::string(sg::bf16_unit_name(unit)) + " m=" + std::to_string(s.m) +
                            " n=" + std::to_string(s.n) + " k=" + std::to_string(s.k) +
                            " layout=" + std::to_string(static_cast<int>(layout)) +
                            (accumulate ? " +=" : " =");
  for (int64_t i = 0; i < s.m; ++i) {
    for (int64_t j = 0; j < ldc; ++j) {
      const float got = c[i * ldc + j];
      if (j >= s.n) {
        ASSERT_EQ(got, c_before[i * ldc + j])
            << where << " wrote padding (" << i << "," << j << ")";
        continue;
      }
      double products = 0.0, magnitude = 0.0;
      for (int64_t p = 0; p < s.k; ++p) {
        const double term = as_bf16(a[i * ars + p * acs]) * as_bf16(b[p * ldb + j]);
        products += term;
        magnitude += std::abs(term);
      }
      const double before = accumulate ? c_before[i * ldc + j] : 0.0;
      const double want = before + products;
      // Products of bf16 values are exact in f32; k f32 additions of them, then one more for C:
      // error ≤ (k + 1)·ε·(Σ|terms| + |C|), ε = 2^-24. Without the rounding of the operands to
      // bf16 the result would be off by ~2^-9 of the terms, far outside this.
      const double bound = (s.k + 1) * std::ldexp(1.0, -24) * (magnitude + std::abs(before));
      ASSERT_LE(std::abs(got - want), bound) << where << " at (" << i << "," << j << ")";
    }
  }
}

TEST(Bf16Gemm, EveryUnitMatchesADoubleSumOfTheRoundedOperands) {
  const std::vector<Case> cases = {{1, 1, 1},    {4, 16, 2},   {5, 17, 3},   {16, 16, 32},
                                   {17, 31, 33}, {33, 33, 31}, {64, 64, 64}, {64, 16, 64},
                                   {13, 64, 64}, {65, 70, 5},  {12, 8, 300}, {3, 130, 513},
                                   {1, 200, 1},  {64, 31, 257}};
  Generator gen(2026);
  for (Bf16Unit unit : supported_units()) {
    for (const Case& s : cases) {
      for (Layout layout : {Layout::kRowMajor, Layout::kTransposed, Layout::kStrided}) {
        for (bool accumulate : {false, true}) check_product(unit, s, layout, accumulate, gen);
      }
    }
  }
}

TEST(Bf16Gemm, OperandsAreRoundedToNearestEven) {
  // 1 + 2^-8 lies halfway between bf16 1 and 1 + 2^-7: it rounds to the even 1; 1 + 3·2^-8 to
  // 1 + 2^-6 (even), not truncated to 1 + 2^-7. One product each, exact in every unit.
  for (Bf16Unit unit : supported_units()) {
    const std::vector<float> a = {1.0f + std::ldexp(1.0f, -8), 1.0f + 3 * std::ldexp(1.0f, -8)};
    const std::vector<float> b = {1.0f};
    std::vector<float> c(2, -1.0f);
    sg::GemmArgs<float> args{2, 1, 1, a.data(), 1, 1, b.data(), 1, c.data(), 1, false};
    sg::gemm_bf16(args, unit);
    EXPECT_EQ(c[0], 1.0f) << sg::bf16_unit_name(unit);
    EXPECT_EQ(c[1], 1.0f + std::ldexp(1.0f, -6)) << sg::bf16_unit_name(unit);
  }
}

TEST(Bf16Gemm, NanAndInfinityPropagate) {
  for (Bf16Unit unit : supported_units()) {
    const float inf = std::numeric_limits<float>::infinity();
    const std::vector<float> a = {std::nanf(""), 1.0f, inf, 1.0f};  // [2, 2]
    const std::vector<float> b = {1.0f, 2.0f};                      // [2, 1]
    std::vector<float> c(2);
    sg::GemmArgs<float> args{2, 1, 2, a.data(), 2, 1, b.data(), 1, c.data(), 1, false};
    sg::gemm_bf16(args, unit);
    EXPECT_TRUE(std::isnan(c[0])) << sg::bf16_unit_name(unit);
    EXPECT_EQ(c[1], inf) << sg::bf16_unit_name(unit);
  }
}

TEST(Bf16Gemm, ZeroDepthClearsOrKeepsTheOutputAndEmptyTouchesNothing) {
  for (Bf16Unit unit : supported_units()) {
    std::vector<float> c = {1, 2, 3, 4, 5, 6};
    sg::GemmArgs<float> args{2, 3, 0, nullptr, 0, 1, nullptr, 3, c.data(), 3, true};
    sg::gemm_bf16(args, unit);
    EXPECT_EQ(c, (std::vector<float>{1, 2, 3, 4, 5, 6})) << sg::bf16_unit_name(unit);
    args.accumulate = false;
    sg::gemm_bf16(args, unit);
    EXPECT_EQ(c, (std::vector<float>(6, 0.0f))) << sg::bf16_unit_name(unit);
    std::vector<float> kept = {7, 8};
    sg::GemmArgs<float> empty{0, 2, 4, nullptr, 4, 1, nullptr, 2, kept.data(), 2, false};
    sg::gemm_bf16(empty, unit);
    EXPECT_EQ(kept, (std::vector<float>{7, 8})) << sg::bf16_unit_name(unit);
  }
}

TEST(Bf16Gemm, BadSizesAndUnsupportedUnitsAreRejected) {
  std::vector<float> c(8);
  sg::GemmArgs<float> args{2, 4, 1, nullptr, 1, 1, nullptr, 3, c.data(), 4, false};  // ldb < n
  EXPECT_THROW(sg::gemm_bf16(args, Bf16Unit::kEmulated), Error);
  for (Bf16Unit unit : {Bf16Unit::kAvx512Bf16, Bf16Unit::kAmx}) {
    if (sg::bf16_unit_supported(unit)) continue;
    args.ldb = 4;
    EXPECT_THROW(sg::gemm_bf16(args, unit), Error) << sg::bf16_unit_name(unit);
  }
}

// The run-time choice: the fastest unit the CPU runs, and kEmulated under ROTA_MAX_CPU_ISA below
// avx512 (the environment is restored afterwards).
TEST(Bf16Gemm, BestUnitIsTheFastestSupportedOneAndFollowsTheIsaCap) {
  const char* old = std::getenv("ROTA_MAX_CPU_ISA");
  const std::string saved = old ? old : "";
  unsetenv("ROTA_MAX_CPU_ISA");
  const Bf16Unit fastest = supported_units().back();
  const bool avx512 = backend::vecmath::isa_supported(backend::vecmath::Isa::kAvx512);
  EXPECT_EQ(sg::best_bf16_unit(), avx512 ? fastest : Bf16Unit::kEmulated);
  for (const char* cap : {"avx2", "portable"}) {
    setenv("ROTA_MAX_CPU_ISA", cap, 1);
    EXPECT_EQ(sg::best_bf16_unit(), Bf16Unit::kEmulated) << cap;
  }
  if (old) {
    setenv("ROTA_MAX_CPU_ISA", saved.c_str(), 1);
  } else {
    unsetenv("ROTA_MAX_CPU_ISA");
  }
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
