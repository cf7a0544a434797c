// Seeded random number streams (xoshiro256**) and random tensor factories.
#pragma once

#include <array>
#include <cstdint>

#include "framework/tensor/tensor.h"

namespace rota {

/// A small, fast, reproducible random stream. Its whole state is four 64-bit words, so it
/// can be saved in a checkpoint and restored exactly. Independent streams per component
/// (init, dropout, data order, masking) come from different seeds or from split().
class Generator {
 public:
  using State = std::array<uint64_t, 4>;

  explicit Generator(uint64_t seed = 0);
  /// Next raw 64-bit value.
  uint64_t next_u64();
  /// Uniform in [0, 1) with 53 random bits.
  double next_double();
  /// Uniform in [0, 1) with 24 random bits (float resolution).
  float next_float();
  /// Uniform integer in [0, n) without modulo bias.
  uint64_t next_below(uint64_t n);
  /// Standard normal (Box-Muller; consumes two uniforms per call).
  double next_normal();
  /// A new generator whose stream is independent of this one (advances this one).
  Generator split();

  const State& state() const { return state_; }
  void set_state(const State& state) { state_ = state; }

 private:
  State state_{};
};

/// Uniform samples in [low, high).
Tensor rand(const Shape& shape, Generator& gen, double low = 0.0, double high = 1.0,
            DType dtype = DType::kF32);
/// Normal samples with the given mean and standard deviation.
Tensor randn(const Shape& shape, Generator& gen, double mean = 0.0, double stddev = 1.0,
             DType dtype = DType::kF32);
/// Uniform integers in [low, high).
Tensor randint(const Shape& shape, Generator& gen, int64_t low, int64_t high,
               DType dtype = DType::kI64);
/// A uniformly random permutation of 0..n-1 (Fisher-Yates), as i64.
Tensor randperm(int64_t n, Generator& gen);

}  // namespace rota
