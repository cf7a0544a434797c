// SafetensorsFile: header up front, then tensors read and widened to float32 one at a time.
#include "framework/io/safetensors_file.h"

#include <cstring>

#include <fmt/format.h>

namespace rota::io {

float half_to_float(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1fu;
  uint32_t mantissa = bits & 0x3ffu;
  uint32_t out = 0;
  if (exponent == 0x1f) {  // inf or NaN: all-ones exponent, mantissa kept (NaN stays NaN)
    out = sign | 0x7f800000u | (mantissa << 13);
  } else if (exponent != 0) {  // normal: rebias 15 → 127
    out = sign | ((exponent + 112u) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {  // ±0
    out = sign;
  } else {             // subnormal half: normalise into a float (every one is a normal float)
    uint32_t e = 113;  // 2^-14 is float exponent 127 − 14 = 113 before the shifts
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      --e;
    }
    out = sign | (e << 23) | ((mantissa & 0x3ffu) << 13);
  }
  float value;
  std::memcpy(&value, &out, sizeof(value));
  return value;
}

SafetensorsFile::SafetensorsFile(const std::filesystem::path& path)
    : path_(path), stream_(path, std::ios::binary) {
  const std::string file = path.string();
  if (!stream_) fail("safetensors {}: cannot open the file", file);
  std::error_code ec;
  const uint64_t file_size = std::filesystem::file_size(path, ec);
  if (ec) fail("safetensors {}: cannot read its size: {}", file, ec.message());
  uint64_t header_size = 0;
  if (file_size < 8 || !stream_.read(reinterpret_cast<char*>(&header_size), 8)) {
    fail("safetensors {}: truncated: {} bytes, shorter than the 8-byte header length", file,
         file_size);
  }
  if (header_size > file_size - 8) {
    fail(
        "safetensors {}: header length {} runs past the end of the file ({} bytes): truncated or "
        "corrupted",
        file, header_size, file_size);
  }
  if (header_size > kMaxSafetensorsHeaderBytes) {
    fail("safetensors {}: header length {} exceeds the {} byte limit", file, header_size,
         kMaxSafetensorsHeaderBytes);
  }
  std::string header_text(header_size, '\0');
  if (!stream_.read(header_text.data(), static_cast<std::streamsize>(header_size))) {
    fail("safetensors {}: could not read its {} byte header", file, header_size);
  }
  data_offset_ = 8 + header_size;
  header_ = parse_safetensors_header(header_text, file_size - data_offset_, file);
}

const SafetensorsEntry* SafetensorsFile::find(const std::string& name) const {
  for (const SafetensorsEntry& entry : header_.entries) {
    if (entry.name == name) return &entry;
  }
  return nullptr;
}

Tensor SafetensorsFile::read_f32(const SafetensorsEntry& entry) const {
  Tensor out = Tensor::empty(entry.shape, DType::kF32);
  read_f32(entry, std::span<float>(out.data<float>(), static_cast<size_t>(out.numel())));
  return out;
}

void SafetensorsFile::read_f32(const SafetensorsEntry& entry, std::span<float> out) const {
  const std::string file = path_.string();
  if (entry.dtype != "F32" && entry.dtype != "BF16" && entry.dtype != "F16" &&
      entry.dtype != "F64") {
    fail(
        "safetensors {}: tensor '{}' holds {} values; a floating-point tensor (F32, BF16, F16, "
        "F64) was expected",
        file, entry.name, entry.dtype);
  }
  const uint64_t bytes = entry.end - entry.begin;
  const uint64_t count = bytes / entry.element_size;
  ROTA_CHECK(out.size() == count, "safetensors {}: tensor '{}' has {} values, {} asked for", file,
             entry.name, count, out.size());
  auto read_into = [&](void* destination) {
    stream_.clear();
    stream_.seekg(static_cast<std::streamoff>(data_offset_ + entry.begin));
    if (!stream_.read(static_cast<char*>(destination), static_cast<std::streamsize>(bytes))) {
      fail(
          "safetensors {}: could not read tensor '{}' ({} bytes at offset {}): the file is "
          "truncated or unreadable",
          file, entry.name, bytes, data_offset_ + entry.begin);
    }
  };
  float* values = out.data();
  if (entry.dtype == "F32") {
    if (bytes > 0) read_into(values);
    return;
  }
  std::vector<char> raw(bytes);
  if (bytes > 0) read_into(raw.data());
  if (entry.dtype == "F64") {
    for (uint64_t i = 0; i < count; ++i) {
      double v;
      std::memcpy(&v, raw.data() + 8 * i, 8);
      values[i] = static_cast<float>(v);
    }
    return;
  }
  for (uint64_t i = 0; i < count; ++i) {
    uint16_t bits;
    std::memcpy(&bits, raw.data() + 2 * i, 2);
    if (entry.dtype == "F16") {
      values[i] = half_to_float(bits);
    } else {  // BF16: the top half of a float
      const uint32_t wide = static_cast<uint32_t>(bits) << 16;
      std::memcpy(&values[i], &wide, 4);
    }
  }
}

}  // namespace rota::io
