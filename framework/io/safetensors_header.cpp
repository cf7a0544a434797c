// safetensors header parsing: entries, metadata and the layout of the data section.
#include "framework/io/safetensors_header.h"

#include <algorithm>
#include <limits>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace rota::io {
namespace {

// Every refusal goes through here so that messages share the "safetensors <file>: " prefix.
template <typename... Args>
[[noreturn]] void refuse(const std::string& file, fmt::format_string<Args...> format,
                         Args&&... args) {
  fail("safetensors {}: {}", file, fmt::format(format, std::forward<Args>(args)...));
}

std::optional<uint64_t> element_size_of(const std::string& dtype) {
  if (dtype == "F32" || dtype == "I32") return 4;
  if (dtype == "F64" || dtype == "I64") return 8;
  if (dtype == "BF16" || dtype == "F16") return 2;
  return std::nullopt;
}

uint64_t as_u64(const nlohmann::json& value, const std::string& file, const std::string& what) {
  if (!value.is_number_unsigned()) refuse(file, "{} must be a non-negative integer", what);
  return value.get<uint64_t>();
}

SafetensorsEntry parse_entry(const std::string& file, const std::string& name,
                             const nlohmann::json& info) {
  if (!info.is_object()) refuse(file, "header entry '{}' is not an object", name);
  for (const auto& [key, unused] : info.items()) {
    if (key != "dtype" && key != "shape" && key != "data_offsets") {
      refuse(file, "tensor '{}': unexpected key '{}' in its header entry", name, key);
    }
  }
  for (const char* key : {"dtype", "shape", "data_offsets"}) {
    if (!info.contains(key)) refuse(file, "tensor '{}': header entry has no '{}'", name, key);
  }
  SafetensorsEntry entry;
  entry.name = name;
  if (!info["dtype"].is_string()) refuse(file, "tensor '{}': dtype is not a string", name);
  entry.dtype = info["dtype"].get<std::string>();
  const auto element_size = element_size_of(entry.dtype);
  if (!element_size) {
    refuse(file, "tensor '{}': unsupported dtype '{}' (Rota reads F32, F64, BF16, I32, I64)", name,
           entry.dtype);
  }
  entry.element_size = *element_size;

  const auto& shape = info["shape"];
  if (!shape.is_array()) refuse(file, "tensor '{}': shape is not an array", name);
  // numel * element size must fit in 64 bits; an overflow would defeat the size check below.
  uint64_t nbytes = entry.element_size;
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
           entry.dtype, nbytes);
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
void check_layout(const std::string& file, std::vector<SafetensorsEntry>& entries,
                  uint64_t data_size) {
  std::sort(entries.begin(), entries.end(),
            [](const SafetensorsEntry& a, const SafetensorsEntry& b) {
              return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
            });
  uint64_t covered = 0;
  const SafetensorsEntry* previous = nullptr;
  for (const SafetensorsEntry& entry : entries) {
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

}  // namespace

SafetensorsHeader parse_safetensors_header(std::string_view header_text, uint64_t data_size,
                                           const std::string& file) {
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(header_text);
  } catch (const nlohmann::json::exception& e) {  // syntax, and numbers out of range (406)
    refuse(file, "malformed JSON header: {}", library_detail(e));
  }
  if (!header.is_object()) refuse(file, "the JSON header is not an object");
  SafetensorsHeader result;
  for (const auto& [key, value] : header.items()) {
    if (key == "__metadata__") {
      result.metadata = parse_metadata(file, value);
    } else {
      result.entries.push_back(parse_entry(file, key, value));
    }
  }
  check_layout(file, result.entries, data_size);
  return result;
}

}  // namespace rota::io
