// 64-bit mixing: the splitmix64 generator step and finaliser, seed derivation, hash combining.
#pragma once

#include <cstdint>
#include <initializer_list>

namespace rota {

/// The golden-ratio increment of splitmix64 (2^64 / φ), also the usual hash-combine constant.
inline constexpr uint64_t kGoldenGamma = 0x9e3779b97f4a7c15ull;

/// splitmix64's finaliser: a bijective 64-bit mix, so distinct inputs give distinct outputs.
inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/// One step of the splitmix64 generator: advances `state` and returns the next output.
inline uint64_t splitmix64_next(uint64_t& state) {
  return mix64(state += kGoldenGamma);
}

/// Folds `value` into `seed` (the boost hash_combine rule with a 64-bit constant).
inline uint64_t hash_combine(uint64_t seed, uint64_t value) {
  return seed ^ (value + kGoldenGamma + (seed << 6) + (seed >> 2));
}

/// A well-mixed 64-bit seed from several values: each value is folded in and the result
/// finalised with mix64, so nearby tuples ((s, 0) and (s, 1)) give unrelated streams.
inline uint64_t mix_seed(std::initializer_list<uint64_t> values) {
  uint64_t h = 0x6a09e667f3bcc909ull;  // arbitrary non-zero start
  for (uint64_t v : values) h = mix64(hash_combine(h, v));
  return h;
}

}  // namespace rota
