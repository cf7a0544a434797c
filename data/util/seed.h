// Deriving independent seeds from (seed, epoch, index) tuples (splitmix64 finaliser).
#pragma once

#include <cstdint>
#include <initializer_list>

namespace rota::data {

/// A well-mixed 64-bit seed from several values: each value is folded in with the splitmix64
/// finaliser, so nearby tuples ((s, 0) and (s, 1)) give unrelated streams.
inline uint64_t mix_seed(std::initializer_list<uint64_t> values) {
  uint64_t h = 0x6a09e667f3bcc909ull;  // arbitrary non-zero start
  for (uint64_t v : values) {
    uint64_t z = h ^ (v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2));
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    h = z ^ (z >> 31);
  }
  return h;
}

}  // namespace rota::data
