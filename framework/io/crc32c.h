// CRC-32C (Castagnoli): checksums for safetensors data, checkpoint files and TFRecord framing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace rota::io {

/// CRC-32C of `size` bytes (reflected polynomial 0x82F63B78, initial value and final XOR
/// 0xFFFFFFFF; crc32c("123456789") = 0xE3069283). To checksum data in pieces, pass the previous
/// result as `crc`: crc32c(b, nb, crc32c(a, na)) == crc32c(a + b).
uint32_t crc32c(const void* data, size_t size, uint32_t crc = 0);
inline uint32_t crc32c(std::string_view bytes, uint32_t crc = 0) {
  return crc32c(bytes.data(), bytes.size(), crc);
}

/// The portable table-driven implementation (what crc32c uses when the CPU lacks SSE 4.2);
/// exposed so tests can check both paths against each other.
uint32_t crc32c_portable(const void* data, size_t size, uint32_t crc = 0);

/// TFRecord's masked CRC: rotate right by 15 and add a constant, so that a CRC stored next to
/// the data it covers does not checksum to a fixed pattern.
inline uint32_t mask_crc32c(uint32_t crc) {
  return ((crc >> 15) | (crc << 17)) + 0xA282EAD8u;
}
inline uint32_t unmask_crc32c(uint32_t masked) {
  const uint32_t rotated = masked - 0xA282EAD8u;
  return (rotated >> 17) | (rotated << 15);
}

}  // namespace rota::io
