// DType sizes and names, and bf16 conversion checked against an independent rounding model.
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "framework/tensor/dtype.h"
#include "framework/tensor/random.h"
#include "framework/tensor/tensor.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

bool bf16_is_nan(uint16_t b) {
  return (b & 0x7f80u) == 0x7f80u && (b & 0x007fu) != 0;
}

// Value of a bf16 bit pattern, computed arithmetically (sign * 2^e * 1.m or denormal), without
// going through bf16_to_float. The all-ones exponent pattern with zero mantissa is infinity;
// for rounding purposes it stands at 2^128 (where the next binade would start).
double bf16_value_for_rounding(uint16_t b) {
  const int sign = (b & 0x8000u) ? -1 : 1;
  const int exponent = (b >> 7) & 0xff;
  const int mantissa = b & 0x7f;
  double magnitude;
  if (exponent == 0) {
    magnitude = std::ldexp(mantissa, -126 - 7);
  } else {
    magnitude = std::ldexp(128 + mantissa, exponent - 127 - 7);
  }
  return sign * magnitude;
}

// Reference f64 -> bf16, round to nearest, ties to even, by comparing distances to the two
// neighbouring bf16 values exactly in long double arithmetic (64-bit significand: the
// distances between a double and a bf16 value of similar magnitude are exact).
uint16_t reference_to_bf16(double x) {
  if (std::isnan(x)) return 0x7fc0;
  const uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  const long double a = std::fabs(static_cast<long double>(x));
  // Largest bf16 magnitude pattern whose value is <= a (truncation), searched directly.
  uint16_t lo = 0;
  for (int bit = 14; bit >= 0; --bit) {
    const uint16_t candidate = lo | static_cast<uint16_t>(1u << bit);
    if (candidate <= 0x7f80 && bf16_value_for_rounding(candidate) <= a) lo = candidate;
  }
  if (lo == 0x7f80) return sign | 0x7f80;  // already infinite
  const uint16_t hi = lo + 1;
  const long double d_lo = a - bf16_value_for_rounding(lo);
  const long double d_hi = bf16_value_for_rounding(hi) - a;
  uint16_t pick;
  if (d_lo < d_hi) {
    pick = lo;
  } else if (d_hi < d_lo) {
    pick = hi;
  } else {
    pick = (lo & 1) ? hi : lo;
  }
  return sign | pick;
}

TEST(DType, SizesNamesAndKinds) {
  EXPECT_EQ(dtype_size(DType::kF32), 4u);
  EXPECT_EQ(dtype_size(DType::kF64), 8u);
  EXPECT_EQ(dtype_size(DType::kBF16), 2u);
  EXPECT_EQ(dtype_size(DType::kI32), 4u);
  EXPECT_EQ(dtype_size(DType::kI64), 8u);
  EXPECT_EQ(sizeof(BF16), 2u);
  EXPECT_STREQ(dtype_name(DType::kF32), "f32");
  EXPECT_STREQ(dtype_name(DType::kF64), "f64");
  EXPECT_STREQ(dtype_name(DType::kBF16), "bf16");
  EXPECT_STREQ(dtype_name(DType::kI32), "i32");
  EXPECT_STREQ(dtype_name(DType::kI64), "i64");
  EXPECT_TRUE(is_floating(DType::kF32));
  EXPECT_TRUE(is_floating(DType::kF64));
  EXPECT_TRUE(is_floating(DType::kBF16));
  EXPECT_FALSE(is_floating(DType::kI32));
  EXPECT_FALSE(is_floating(DType::kI64));
  EXPECT_EQ(DTypeOf<float>::value, DType::kF32);
  EXPECT_EQ(DTypeOf<BF16>::value, DType::kBF16);
  EXPECT_EQ(DTypeOf<int64_t>::value, DType::kI64);
}

TEST(BF16, HandPickedBitPatterns) {
  struct Case {
    uint32_t f32;
    uint16_t bf16;
    const char* why;
  };
  const Case cases[] = {
      {0x3f800000, 0x3f80, "1.0 exact"},
      {0x3f808000, 0x3f80, "1 + 2^-8: tie, 0x3f80 even stays"},
      {0x3f818000, 0x3f82, "tie above odd 0x3f81 rounds up to even"},
      {0x3f808001, 0x3f81, "just above the tie rounds up"},
      {0x3f807fff, 0x3f80, "just below the tie rounds down"},
      {0xbf818000, 0xbf82, "negative tie rounds magnitude to even"},
      {0xbf808000, 0xbf80, "negative tie stays at even"},
      {0x3fffffff, 0x4000, "mantissa carry into the exponent"},
      {0x7f7f0000, 0x7f7f, "largest finite bf16 exact"},
      {0x7f7f7fff, 0x7f7f, "below half an ulp above max stays finite"},
      {0x7f7f8000, 0x7f80, "tie above odd max rounds to infinity"},
      {0x7f7fffff, 0x7f80, "f32 max rounds to infinity"},
      {0xff7fffff, 0xff80, "-f32 max rounds to -infinity"},
      {0x7f800000, 0x7f80, "+inf"},
      {0xff800000, 0xff80, "-inf"},
      {0x00000000, 0x0000, "+0"},
      {0x80000000, 0x8000, "-0"},
      {0x00008000, 0x0000, "denormal tie rounds to even zero"},
      {0x00018000, 0x0002, "denormal tie above odd rounds up"},
      {0x00010000, 0x0001, "smallest bf16 denormal exact"},
      {0x00008001, 0x0001, "just above half the smallest denormal"},
      {0x007fffff, 0x0080, "largest f32 denormal rounds to smallest normal"},
      {0x807fffff, 0x8080, "negative largest denormal"},
      {0x00000001, 0x0000, "smallest f32 denormal rounds to zero"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(float_to_bf16(std::bit_cast<float>(c.f32)).bits, c.bf16)
        << c.why << " (0x" << std::hex << c.f32 << ")";
    EXPECT_EQ(reference_to_bf16(std::bit_cast<float>(c.f32)), c.bf16) << "reference: " << c.why;
  }
}

TEST(BF16, NaNStaysNaN) {
  const uint32_t nans[] = {0x7fc00000, 0xffc00000, 0x7f800001, 0xff800001, 0x7f80ffff,
                           0x7fffffff, 0xffffffff, 0x7fbfffff, 0x7f808000};
  for (uint32_t u : nans) {
    ASSERT_TRUE(std::isnan(std::bit_cast<float>(u)));
    const uint16_t b = float_to_bf16(std::bit_cast<float>(u)).bits;
    EXPECT_TRUE(bf16_is_nan(b)) << std::hex << u << " -> " << b;
    EXPECT_EQ(b & 0x8000u, (u >> 16) & 0x8000u) << "sign kept for " << std::hex << u;
    EXPECT_TRUE(std::isnan(bf16_to_float(BF16{b})));
  }
}

TEST(BF16, EveryHighHalfAgainstReference) {
  // For all 65536 upper halves, the low halves that matter for rounding (exact, just above,
  // just below / at / above the tie, all ones) plus a pseudo-random one.
  Generator gen(99);
  int64_t checked = 0;
  for (uint32_t hi = 0; hi < 0x10000u; ++hi) {
    const uint32_t lows[] = {0x0000,
                             0x0001,
                             0x7fff,
                             0x8000,
                             0x8001,
                             0xffff,
                             static_cast<uint32_t>(gen.next_u64() & 0xffff)};
    for (uint32_t lo : lows) {
      const uint32_t u = (hi << 16) | lo;
      const float f = std::bit_cast<float>(u);
      const uint16_t got = float_to_bf16(f).bits;
      if (std::isnan(f)) {
        ASSERT_TRUE(bf16_is_nan(got)) << std::hex << u;
        continue;
      }
      ASSERT_EQ(got, reference_to_bf16(f)) << std::hex << "f32 bits 0x" << u;
      ++checked;
    }
  }
  EXPECT_GT(checked, 400000);
}

TEST(BF16, ToFloatIsExactAndRoundTrips) {
  for (uint32_t b = 0; b < 0x10000u; ++b) {
    const float f = bf16_to_float(BF16{static_cast<uint16_t>(b)});
    EXPECT_EQ(std::bit_cast<uint32_t>(f), b << 16);
    if (bf16_is_nan(static_cast<uint16_t>(b))) continue;
    // Compare bit patterns (not values): -0 and denormals must survive too.
    ASSERT_EQ(float_to_bf16(f).bits, b);
    if ((b & 0x7fffu) == 0x7f80u) {
      ASSERT_TRUE(std::isinf(f));
    } else {
      ASSERT_EQ(static_cast<double>(f), bf16_value_for_rounding(static_cast<uint16_t>(b)));
    }
  }
}

TEST(BF16, DoubleToBF16RoundsOnce) {
  // A double just above a bf16 tie must round up. Rounding to f32 first would land exactly
  // on the tie (the excess 2^-30 is below half an f32 ulp) and then round down to even.
  const double tie = 1.0 + std::ldexp(1.0, -8);  // halfway between 1 and 1 + 2^-7
  const std::vector<double> values = {
      tie + std::ldexp(1.0, -30), tie - std::ldexp(1.0, -30), -(tie + std::ldexp(1.0, -30)),
      1.0 + 3 * std::ldexp(1.0, -8) - std::ldexp(1.0, -40), tie, 1e300, -1e300, 1e-300,
      std::ldexp(1.0, -140) * 1.5,
      // Halfway between the largest finite bf16 (1 + 127/128) 2^127 and 2^128: ties to inf.
      std::ldexp(1.0 + 255.0 / 256.0, 127)};
  std::vector<double> expected;
  for (double v : values) {
    expected.push_back(bf16_to_float(BF16{reference_to_bf16(v)}));
  }
  ASSERT_EQ(expected[0], 1.0 + std::ldexp(1.0, -7));
  ASSERT_EQ(expected[1], 1.0);
  const Tensor from_values = tensor_from(values, {10}, DType::kBF16);
  EXPECT_EQ(from_values.to_double_vector(), expected);
  const Tensor from_f64 = tensor_from(values, {10}, DType::kF64).to(DType::kBF16);
  EXPECT_EQ(from_f64.to_double_vector(), expected);
  Tensor filled = Tensor::empty({1}, DType::kBF16);
  filled.fill(values[0]);
  EXPECT_EQ(filled.item(), expected[0]);
  filled.set({0}, values[2]);
  EXPECT_EQ(filled.item(), expected[2]);
  // Random doubles with random low bits, checked in bulk.
  Generator gen(5);
  for (int i = 0; i < 20000; ++i) {
    const double v = std::ldexp(gen.next_double() + 0.5, static_cast<int>(gen.next_below(60)) - 30);
    const double x = (gen.next_u64() & 1) ? v : -v;
    Tensor t = Tensor::empty({}, DType::kBF16);
    t.fill(x);
    ASSERT_EQ(t.item(), bf16_to_float(BF16{reference_to_bf16(x)})) << std::hexfloat << x;
  }
}

TEST(BF16, TensorConversionsFollowTheScalarRule) {
  const std::vector<double> values = {1.0, -0.0, 65504.0, 1e-3, -7.25, 3.0e38, 1e-39};
  const Tensor f = tensor_from(values, {7}, DType::kF32);
  const Tensor b = f.to(DType::kBF16);
  const std::vector<double> got = b.to_double_vector();
  const std::vector<double> f_values = f.to_double_vector();
  for (size_t i = 0; i < values.size(); ++i) {
    const float fv = static_cast<float>(f_values[i]);
    EXPECT_EQ(got[i], bf16_to_float(float_to_bf16(fv))) << i;
  }
  EXPECT_TRUE(std::signbit(got[1]));
  // bf16 -> i32 truncates the bf16 value.
  EXPECT_EQ(tensor_from({-7.25}, {1}, DType::kBF16).to(DType::kI32).item(), -7.0);
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
