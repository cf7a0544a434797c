// Element types a tensor can hold, their sizes and names, and bf16 <-> f32 conversion.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

namespace rota {

/// Element type. f64 exists for double-precision reference maths and gradient checks.
enum class DType : uint8_t { kF32, kF64, kBF16, kI32, kI64 };

/// Size in bytes of one element.
size_t dtype_size(DType dtype);
/// Short lowercase name: "f32", "f64", "bf16", "i32", "i64".
const char* dtype_name(DType dtype);
/// True for f32, f64 and bf16.
bool is_floating(DType dtype);

/// bfloat16 storage type: the upper 16 bits of an IEEE f32.
struct BF16 {
  uint16_t bits = 0;
};

/// f32 -> bf16 with round-to-nearest-even; NaN stays NaN (quiet).
inline BF16 float_to_bf16(float value) {
  uint32_t u;
  std::memcpy(&u, &value, sizeof(u));
  if ((u & 0x7fffffffu) > 0x7f800000u) return BF16{static_cast<uint16_t>((u >> 16) | 0x40u)};
  const uint32_t rounding = 0x7fffu + ((u >> 16) & 1u);
  return BF16{static_cast<uint16_t>((u + rounding) >> 16)};
}

/// f64 -> bf16 rounded once to nearest-even. Going through f32 with ordinary rounding would
/// round twice: a double just above a bf16 tie can round onto the tie in f32 and then down
/// to even. Rounding to f32 "to odd" instead (truncate, set the last bit when inexact) keeps
/// enough information (24 >= 8 + 2 bits) for the final rounding to equal a single one.
inline BF16 double_to_bf16(double value) {
  float f = static_cast<float>(value);
  if (value == value && static_cast<double>(f) != value) {
    uint32_t u;
    std::memcpy(&u, &f, sizeof(u));
    // Step the magnitude toward zero if the f32 rounding went away from zero (also turns an
    // overflow to infinity into the largest finite float, which then rounds to bf16 inf).
    if (std::fabs(static_cast<double>(f)) > std::fabs(value)) u -= 1;
    u |= 1u;
    std::memcpy(&f, &u, sizeof(f));
  }
  return float_to_bf16(f);
}

/// bf16 -> f32 (exact).
inline float bf16_to_float(BF16 value) {
  const uint32_t u = static_cast<uint32_t>(value.bits) << 16;
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

/// Maps a C++ element type to its DType: DTypeOf<T>::value (no other type compiles).
template <typename T>
struct DTypeOf {
  static constexpr DType value = [] {
    if constexpr (std::is_same_v<T, float>) {
      return DType::kF32;
    } else if constexpr (std::is_same_v<T, double>) {
      return DType::kF64;
    } else if constexpr (std::is_same_v<T, BF16>) {
      return DType::kBF16;
    } else if constexpr (std::is_same_v<T, int32_t>) {
      return DType::kI32;
    } else {
      static_assert(std::is_same_v<T, int64_t>, "DTypeOf: not a tensor element type");
      return DType::kI64;
    }
  }();
};

}  // namespace rota
