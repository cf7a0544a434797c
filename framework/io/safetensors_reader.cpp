// safetensors reader: validates the header, offsets and data CRC before building any tensor.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>

#include <fmt/format.h>

#include "framework/base/mapped_file.h"
#include "framework/io/crc32c.h"
#include "framework/io/safetensors.h"
#include "framework/io/safetensors_header.h"

namespace rota::io {
namespace {

// Every refusal goes through here so that messages share the "safetensors <file>: " prefix.
template <typename... Args>
[[noreturn]] void refuse(const std::string& file, fmt::format_string<Args...> format,
                         Args&&... args) {
  fail("safetensors {}: {}", file, fmt::format(format, std::forward<Args>(args)...));
}

/// The Rota dtype of a header dtype; F16 (which Rota has no dtype for) is refused.
DType rota_dtype(const std::string& file, const SafetensorsEntry& entry) {
  if (entry.dtype == "F32") return DType::kF32;
  if (entry.dtype == "F64") return DType::kF64;
  if (entry.dtype == "BF16") return DType::kBF16;
  if (entry.dtype == "I32") return DType::kI32;
  if (entry.dtype == "I64") return DType::kI64;
  refuse(file, "tensor '{}': unsupported dtype '{}' (Rota reads F32, F64, BF16, I32, I64)",
         entry.name, entry.dtype);
}

void check_data_crc(const std::string& file, const SafetensorsMetadata& metadata,
                    std::string_view data) {
  const auto format = metadata.find(kMetadataFormat);
  const bool is_rota = format != metadata.end() && format->second == "rota";
  if (is_rota) {
    const auto version = metadata.find(kMetadataFormatVersion);
    if (version == metadata.end()) refuse(file, "a Rota file without '{}'", kMetadataFormatVersion);
    if (version->second != std::to_string(kSafetensorsFormatVersion)) {
      refuse(file, "format_version '{}' is not supported (this build reads {})", version->second,
             kSafetensorsFormatVersion);
    }
  }
  const auto stored = metadata.find(kMetadataDataCrc);
  if (stored == metadata.end()) {
    if (is_rota) refuse(file, "a Rota file without '{}' in its metadata", kMetadataDataCrc);
    return;  // a file from another writer: nothing to check against
  }
  const uint32_t actual = crc32c(data);
  const std::string actual_text = fmt::format("{:08x}", actual);
  if (stored->second != actual_text) {
    refuse(file,
           "data checksum mismatch: the header records crc32c {} but the data has {} (the file "
           "is corrupted)",
           stored->second, actual_text);
  }
}

}  // namespace

SafetensorsContent parse_safetensors(std::string_view bytes, const std::string& name) {
  if (bytes.size() < 8) {
    refuse(name, "truncated: {} bytes, shorter than the 8-byte header length", bytes.size());
  }
  uint64_t header_size = 0;
  std::memcpy(&header_size, bytes.data(), 8);  // little-endian host (asserted by the writer)
  if (header_size > bytes.size() - 8) {
    refuse(name,
           "header length {} runs past the end of the file ({} bytes): truncated or corrupted",
           header_size, bytes.size());
  }
  if (header_size > kMaxSafetensorsHeaderBytes) {
    refuse(name, "header length {} exceeds the {} byte limit", header_size,
           kMaxSafetensorsHeaderBytes);
  }
  const std::string_view header_text = bytes.substr(8, header_size);
  const std::string_view data = bytes.substr(8 + header_size);

  const SafetensorsHeader header = parse_safetensors_header(header_text, data.size(), name);
  SafetensorsContent content;
  content.metadata = header.metadata;
  std::vector<DType> dtypes;
  for (const SafetensorsEntry& entry : header.entries) dtypes.push_back(rota_dtype(name, entry));
  check_data_crc(name, content.metadata, data);

  for (size_t i = 0; i < header.entries.size(); ++i) {  // sorted by offset: the written order
    const SafetensorsEntry& entry = header.entries[i];
    Tensor tensor = Tensor::empty(entry.shape, dtypes[i]);
    if (entry.end > entry.begin) {
      std::memcpy(tensor.raw_data(), data.data() + entry.begin, entry.end - entry.begin);
    }
    content.tensors.insert(entry.name, std::move(tensor));
  }
  return content;
}

SafetensorsContent load_safetensors(const std::filesystem::path& path) {
  const MappedFile file(path);
  return parse_safetensors(file.bytes(), path.string());
}

}  // namespace rota::io
