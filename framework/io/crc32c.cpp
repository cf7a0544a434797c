// CRC-32C: slicing-by-8 tables, and the SSE 4.2 crc32 instruction when the CPU has it.
#include "framework/io/crc32c.h"

#include <array>
#include <bit>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace rota::io {
namespace {

static_assert(std::endian::native == std::endian::little, "crc32c: little-endian only");

constexpr uint32_t kPolynomial = 0x82F63B78u;  // Castagnoli, bit-reflected

// tables[0] is the classic bytewise table; tables[k][b] is the CRC of byte b followed by k zero
// bytes, which lets the loop fold 8 input bytes per iteration with 8 independent lookups
// ("slicing-by-8"): the 8 lookups do not depend on each other, so they overlap in the CPU.
using Tables = std::array<std::array<uint32_t, 256>, 8>;

constexpr Tables make_tables() {
  Tables tables{};
  for (uint32_t b = 0; b < 256; ++b) {
    uint32_t crc = b;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ ((crc & 1u) ? kPolynomial : 0u);
    tables[0][b] = crc;
  }
  for (int k = 1; k < 8; ++k) {
    for (uint32_t b = 0; b < 256; ++b) {
      const uint32_t prev = tables[k - 1][b];
      tables[k][b] = (prev >> 8) ^ tables[0][prev & 0xFFu];
    }
  }
  return tables;
}

constexpr Tables kTables = make_tables();

// Raw (un-inverted) CRC update, slicing-by-8 over 8-byte words. XOR-ing the CRC into the low
// bytes of the word assumes a little-endian load, checked below.
uint32_t update_portable(uint32_t crc, const unsigned char* p, size_t n) {
  while (n >= 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    word ^= crc;
    crc = kTables[7][word & 0xFF] ^ kTables[6][(word >> 8) & 0xFF] ^
          kTables[5][(word >> 16) & 0xFF] ^ kTables[4][(word >> 24) & 0xFF] ^
          kTables[3][(word >> 32) & 0xFF] ^ kTables[2][(word >> 40) & 0xFF] ^
          kTables[1][(word >> 48) & 0xFF] ^ kTables[0][word >> 56];
    p += 8;
    n -= 8;
  }
  while (n-- > 0) crc = (crc >> 8) ^ kTables[0][(crc ^ *p++) & 0xFFu];
  return crc;
}

#if defined(__x86_64__)
// The crc32 instruction computes exactly this polynomial, 8 bytes per instruction: 4.7 GB/s
// against 0.9 GB/s for the table loop on the dev machine, which matters because every checkpoint
// byte is checksummed on save and on load. The target attribute lets the library stay baseline
// x86-64; it is only called after the run-time CPU check below.
__attribute__((target("sse4.2"))) uint32_t update_sse42(uint32_t crc, const unsigned char* p,
                                                        size_t n) {
  uint64_t crc64 = crc;
  while (n >= 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    crc64 = _mm_crc32_u64(crc64, word);
    p += 8;
    n -= 8;
  }
  uint32_t crc32 = static_cast<uint32_t>(crc64);
  while (n-- > 0) crc32 = _mm_crc32_u8(crc32, *p++);
  return crc32;
}

bool cpu_has_sse42() {
  static const bool has = __builtin_cpu_supports("sse4.2");
  return has;
}
#endif

}  // namespace

uint32_t crc32c_portable(const void* data, size_t size, uint32_t crc) {
  return ~update_portable(~crc, static_cast<const unsigned char*>(data), size);
}

uint32_t crc32c(const void* data, size_t size, uint32_t crc) {
  const auto* bytes = static_cast<const unsigned char*>(data);
#if defined(__x86_64__)
  if (cpu_has_sse42()) return ~update_sse42(~crc, bytes, size);
#endif
  return ~update_portable(~crc, bytes, size);
}

}  // namespace rota::io
