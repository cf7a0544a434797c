// xoshiro256** generator and random tensor factories.
#include "framework/tensor/random.h"

#include "framework/base/seed_mix.h"

#include <cmath>
#include <vector>

namespace rota {

namespace {

uint64_t rotl(uint64_t x, int k) {
  return (x << k) | (x >> (64 - k));
}

constexpr double kTwoPi = 6.283185307179586476925286766559;

}  // namespace

Generator::Generator(uint64_t seed) {
  uint64_t x = seed;
  for (auto& word : state_) word = splitmix64_next(x);
}

uint64_t Generator::next_u64() {
  // xoshiro256** (Blackman & Vigna): period 2^256 - 1, passes BigCrush.
  const uint64_t result = rotl(state_[1] * 5, 7) * 9;
  const uint64_t t = state_[1] << 17;
  state_[2] ^= state_[0];
  state_[3] ^= state_[1];
  state_[1] ^= state_[2];
  state_[0] ^= state_[3];
  state_[2] ^= t;
  state_[3] = rotl(state_[3], 45);
  return result;
}

double Generator::next_double() {
  return static_cast<double>(next_u64() >> 11) * 0x1.0p-53;
}

float Generator::next_float() {
  return static_cast<float>(next_u64() >> 40) * 0x1.0p-24f;
}

uint64_t Generator::next_below(uint64_t n) {
  ROTA_CHECK(n > 0, "next_below: n must be positive");
  // Rejection sampling: discard the top partial block so every residue is equally likely.
  const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  uint64_t x;
  do {
    x = next_u64();
  } while (x >= limit);
  return x % n;
}

double Generator::next_normal() {
  double u1 = next_double();
  const double u2 = next_double();
  if (u1 < 1e-300) u1 = 1e-300;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(kTwoPi * u2);
}

Generator Generator::split() {
  Generator child(0);
  uint64_t x = next_u64();
  for (auto& word : child.state_) word = splitmix64_next(x);
  return child;
}

namespace {

// v rounded to the precision of a floating dtype, as a double.
double round_to_dtype(double v, DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return static_cast<float>(v);
    case DType::kBF16:
      return bf16_to_float(double_to_bf16(v));
    default:
      return v;
  }
}

// The largest value of a floating dtype strictly below x (x representable in dtype).
double largest_below(double x, DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return std::nextafter(static_cast<float>(x), -INFINITY);
    case DType::kBF16: {
      // bf16 is sign-magnitude: step the bit pattern's magnitude (through zero to -denormal).
      const uint16_t bits = double_to_bf16(x).bits;
      const uint16_t below = x > 0 ? bits - 1 : (bits & 0x7fffu) == 0 ? 0x8001 : bits + 1;
      return bf16_to_float(BF16{below});
    }
    default:
      return std::nextafter(x, -INFINITY);
  }
}

}  // namespace

Tensor rand(const Shape& shape, Generator& gen, double low, double high, DType dtype) {
  ROTA_CHECK(is_floating(dtype), "rand: dtype {} is not floating", dtype_name(dtype));
  // low + (high - low) * u with u < 1 can still round up to high: in f64 occasionally, when
  // stored as f32 for u > 1 - 2^-25, and as bf16 for u > 1 - 2^-9 (1 draw in 500). Such
  // draws become the largest value of the dtype below high, keeping the range [low, high).
  const double high_in_dtype = round_to_dtype(high, dtype);
  const double ceiling = largest_below(high_in_dtype, dtype);
  Tensor out = Tensor::empty(shape, dtype);
  fill_elements(out, [&] {
    const double v = low + (high - low) * gen.next_double();
    return round_to_dtype(v, dtype) >= high_in_dtype ? ceiling : v;
  });
  return out;
}

Tensor randn(const Shape& shape, Generator& gen, double mean, double stddev, DType dtype) {
  ROTA_CHECK(is_floating(dtype), "randn: dtype {} is not floating", dtype_name(dtype));
  Tensor out = Tensor::empty(shape, dtype);
  fill_elements(out, [&] { return mean + stddev * gen.next_normal(); });
  return out;
}

Tensor randint(const Shape& shape, Generator& gen, int64_t low, int64_t high, DType dtype) {
  ROTA_CHECK(high > low, "randint: empty range [{}, {})", low, high);
  std::vector<double> values(shape_numel(shape));
  for (auto& v : values) {
    v = static_cast<double>(low + static_cast<int64_t>(gen.next_below(high - low)));
  }
  return tensor_from(values, shape, dtype);
}

Tensor randperm(int64_t n, Generator& gen) {
  Tensor out = Tensor::empty({n}, DType::kI64);
  int64_t* p = out.data<int64_t>();
  for (int64_t i = 0; i < n; ++i) p[i] = i;
  for (int64_t i = n - 1; i > 0; --i) {
    const int64_t j = static_cast<int64_t>(gen.next_below(static_cast<uint64_t>(i + 1)));
    std::swap(p[i], p[j]);
  }
  return out;
}

}  // namespace rota
