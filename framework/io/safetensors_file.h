// A safetensors file read one tensor at a time (for checkpoints too large to hold twice).
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>
#include <vector>

#include "framework/io/safetensors_header.h"
#include "framework/tensor/tensor.h"

namespace rota::io {

/// Opens a safetensors file from any writer (transformers, safetensors, Rota) and reads its
/// header only; tensors are read from disk when asked for, so a reader holds at most the tensor
/// it returns. The header is checked as parse_safetensors_header says; a data CRC ("data_crc32c",
/// Rota's files) is not checked here, as that would read the whole file.
class SafetensorsFile {
 public:
  explicit SafetensorsFile(const std::filesystem::path& path);

  const std::filesystem::path& path() const { return path_; }
  /// Sorted by offset.
  const std::vector<SafetensorsEntry>& entries() const { return header_.entries; }
  const SafetensorsMetadata& metadata() const { return header_.metadata; }
  /// The entry called `name`, or nullptr.
  const SafetensorsEntry* find(const std::string& name) const;
  /// The tensor of `entry` (one of entries()) as float32: F32 as stored, BF16 and F16 widened
  /// exactly, F64 rounded to nearest. Integer tensors are refused (rota::Error naming the file
  /// and the tensor), as is a file that is shorter than its header says.
  Tensor read_f32(const SafetensorsEntry& entry) const;
  /// The same into `out` (entry's element count of floats): no tensor allocated, so a caller
  /// can read a weight straight into the model's memory.
  void read_f32(const SafetensorsEntry& entry, std::span<float> out) const;

 private:
  std::filesystem::path path_;
  mutable std::ifstream stream_;
  uint64_t data_offset_ = 0;  // 8 + header length
  SafetensorsHeader header_;
};

/// IEEE half precision bits → float (exact: every half is a float).
float half_to_float(uint16_t bits);

}  // namespace rota::io
