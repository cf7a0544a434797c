// safetensors reader: validates the header, offsets and data CRC before building any tensor.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "framework/base/mapped_file.h"
#include "framework/io/crc32c.h"
#include "framework/io/safetensors.h"

namespace rota::io {
namespace {

// Larger headers are refused before parsing (the reference implementation's limit too): a
// corrupted length must not make us parse or allocate gigabytes.
constexpr uint64_t kMaxHeaderBytes = 100u << 20;

struct Entry {
  std::string name;
  DType dtype;
  Shape shape;
  uint64_t begin;
  uint64_t end;
};

// Every refusal goes through here so that messages share the "safetensors <file>: " prefix.
template <typename... Args>
[[noreturn]] void refuse(const std::string& file, fmt::format_string<Args...> format,
                         Args&&... args) {
  fail("safetensors {}: {}", file, fmt::format(format, std::forward<Args>(args)...));
}

std::optional<DType> parse_dtype(const std::string& name) {
  if (name == "F32") return DType::kF32;
  if (name == "F64") return DType::kF64;
  if (name == "BF16") return DType::kBF16;
  if (name == "I32") return DType::kI32;
  if (name == "I64") return DType::kI64;
  return std::nullopt;
}

uint64_t as_u64(const nlohmann::json& value, const std::string& file, const std::string& what) {
  if (!value.is_number_unsigned()) refuse(file, "{} must be a non-negative integer", what);
  return value.get<uint64_t>();
}

Entry parse_entry(const std::string& file, const std::string& name, const nlohmann::json& info) {
  if (!info.is_object()) refuse(file, "header entry '{}' is not an object", name);
  for (const auto& [key, unused] : info.items()) {
    if (key != "dtype" && key != "shape" && key != "data_offsets") {
      refuse(file, "tensor '{}': unexpected key '{}' in its header entry", name, key);
    }
  }
  for (const char* key : {"dtype", "shape", "data_offsets"}) {
    if (!info.contains(key)) refuse(file, "tensor '{}': header entry has no '{}'", name, key);
  }
  Entry entry;
  entry.name = name;
  if (!info["dtype"].is_string()) refuse(file, "tensor '{}': dtype is not a string", name);
  const std::string dtype_text = info["dtype"].get<std::string>();
  const auto dtype = parse_dtype(dtype_text);
  if (!dtype) {
    refuse(file, "tensor '{}': unsupported dtype '{}' (Rota reads F32, F64, BF16, I32, I64)", name,
           dtype_text);
  }
  entry.dtype = *dtype;

  const auto& shape = info["shape"];
  if (!shape.is_array()) refuse(file, "tensor '{}': shape is not an array", name);
  // numel * element size must fit in 64 bits; an overflow would defeat the size check below.
  uint64_t nbytes = dtype_size(entry.dtype);
  for (const auto& dim : shape) {
    const uint64_t size = as_u64(dim, file, fmt::format("tensor '{}': each shape entry", name));
    if (size > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
        (size != 0 && nbytes > std::numeric_limits<uint64_t>::max() / size)) {
      refuse(file, "tensor '{}': shape {} is too large", name, shape.dump());
    }
    nbytes *= size;
    entry.shape.push_back(static_cast<int64_t>(size));
  }

  const auto& offsets = info["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2) {
    refuse(file, "tensor '{}': data_offsets must be [begin, end]", name);
  }
  entry.begin = as_u64(offsets[0], file, fmt::format("tensor '{}': data_offsets[0]", name));
  entry.end = as_u64(offsets[1], file, fmt::format("tensor '{}': data_offsets[1]", name));
  if (entry.end < entry.begin) {
    refuse(file, "tensor '{}': data_offsets [{}, {}] end before they begin", name, entry.begin,
           entry.end);
  }
  if (entry.end - entry.begin != nbytes) {
    refuse(file, "tensor '{}': data_offsets [{}, {}] span {} bytes but shape {} of {} needs {}",
           name, entry.begin, entry.end, entry.end - entry.begin, shape_str(entry.shape),
           dtype_text, nbytes);
  }
  return entry;
}

SafetensorsMetadata parse_metadata(const std::string& file, const nlohmann::json& meta) {
  if (!meta.is_object()) refuse(file, "__metadata__ is not an object");
  SafetensorsMetadata metadata;
  for (const auto& [key, value] : meta.items()) {
    if (!value.is_string()) refuse(file, "__metadata__ value of '{}' is not a string", key);
    metadata[key] = value.get<std::string>();
  }
  return metadata;
}

// Offsets must tile the data section exactly: sorted by begin, each tensor starts where the
// previous one ended and the last one ends at the end of the file.
void check_layout(const std::string& file, std::vector<Entry>& entries, uint64_t data_size) {
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t covered = 0;
  const Entry* previous = nullptr;
  for (const Entry& entry : entries) {
    if (entry.end > data_size) {
      refuse(file,
             "tensor '{}': data_offsets [{}, {}] run past the end of the data section ({} "
             "bytes): the file is truncated",
             entry.name, entry.begin, entry.end, data_size);
    }
    if (entry.begin < covered) {
      refuse(file, "tensors '{}' [{}, {}] and '{}' [{}, {}] overlap", previous->name,
             previous->begin, previous->end, entry.name, entry.begin, entry.end);
    }
    if (entry.begin > covered) {
      refuse(file, "data bytes [{}, {}) belong to no tensor (gap before '{}')", covered,
             entry.begin, entry.name);
    }
    covered = entry.end;
    previous = &entry;
  }
  if (covered != data_size) {
    refuse(file, "the data section has {} bytes but the tensors cover only {}", data_size, covered);
  }
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
  if (header_size > kMaxHeaderBytes) {
    refuse(name, "header length {} exceeds the {} byte limit", header_size, kMaxHeaderBytes);
  }
  const std::string_view header_text = bytes.substr(8, header_size);
  const std::string_view data = bytes.substr(8 + header_size);

  nlohmann::json header;
  try {
    header = nlohmann::json::parse(header_text);
  } catch (const nlohmann::json::exception& e) {  // syntax, and numbers out of range (406)
    refuse(name, "malformed JSON header: {}", library_detail(e));
  }
  if (!header.is_object()) refuse(name, "the JSON header is not an object");

  SafetensorsContent content;
  std::vector<Entry> entries;
  for (const auto& [key, value] : header.items()) {
    if (key == "__metadata__") {
      content.metadata = parse_metadata(name, value);
    } else {
      entries.push_back(parse_entry(name, key, value));
    }
  }
  check_layout(name, entries, data.size());
  check_data_crc(name, content.metadata, data);

  for (const Entry& entry : entries) {  // sorted by offset: the order the tensors were written
    Tensor tensor = Tensor::empty(entry.shape, entry.dtype);
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
