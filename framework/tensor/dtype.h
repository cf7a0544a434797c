// Element types a tensor can hold, their sizes and names, and bf16 <-> f32 conversion.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

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

/// bf16 -> f32 (exact).
inline float bf16_to_float(BF16 value) {
  const uint32_t u = static_cast<uint32_t>(value.bits) << 16;
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

/// Maps a C++ element type to its DType.
template <typename T>
struct DTypeOf;
template <>
struct DTypeOf<float> {
  static constexpr DType value = DType::kF32;
};
template <>
struct DTypeOf<double> {
  static constexpr DType value = DType::kF64;
};
template <>
struct DTypeOf<BF16> {
  static constexpr DType value = DType::kBF16;
};
template <>
struct DTypeOf<int32_t> {
  static constexpr DType value = DType::kI32;
};
template <>
struct DTypeOf<int64_t> {
  static constexpr DType value = DType::kI64;
};

}  // namespace rota
