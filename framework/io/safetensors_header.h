// The JSON header of a safetensors file: its entries checked against the data section's size.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "framework/io/safetensors.h"

namespace rota::io {

/// One tensor of a safetensors header.
struct SafetensorsEntry {
  std::string name;
  std::string dtype;          // as the file spells it: "F32", "F16", "BF16", "F64", "I32", "I64"
  uint64_t element_size = 0;  // bytes per element of that dtype
  Shape shape;
  uint64_t begin = 0;  // offsets into the data section
  uint64_t end = 0;
};

/// A parsed header: entries sorted by offset (the order the tensors were written) and the
/// "__metadata__" map.
struct SafetensorsHeader {
  std::vector<SafetensorsEntry> entries;
  SafetensorsMetadata metadata;
};

/// Larger headers are refused before parsing (the reference implementation's limit too): a
/// corrupted length must not make us parse or allocate gigabytes.
inline constexpr uint64_t kMaxSafetensorsHeaderBytes = 100u << 20;

/// Parses `header_text` (the JSON after the 8-byte length) of file `file` (named in errors, as
/// "safetensors <file>: ...") whose data section has `data_size` bytes. Refuses malformed JSON,
/// entries not of the form {"dtype", "shape", "data_offsets"}, dtypes other than F32, F16, BF16,
/// F64, I32 and I64, a byte span that does not match shape × dtype size, and offsets that run
/// past the data, overlap or leave gaps.
SafetensorsHeader parse_safetensors_header(std::string_view header_text, uint64_t data_size,
                                           const std::string& file);

}  // namespace rota::io
