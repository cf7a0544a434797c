// safetensors writer: JSON header (nlohmann ordered_json), CRC of the data, streamed atomic write.
#include <bit>
#include <cstdint>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "framework/base/file_io.h"
#include "framework/io/crc32c.h"
#include "framework/io/safetensors.h"

namespace rota::io {

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; Rota writes memory as-is");

const char* safetensors_dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return "F32";
    case DType::kF64:
      return "F64";
    case DType::kBF16:
      return "BF16";
    case DType::kI32:
      return "I32";
    case DType::kI64:
      return "I64";
  }
  fail("safetensors: unknown dtype {}", static_cast<int>(dtype));
}

namespace {

void check_inputs(const std::string& where, const NamedTensors& tensors,
                  const SafetensorsMetadata& metadata) {
  std::set<std::string_view> seen;
  for (const auto& [name, tensor] : tensors) {
    ROTA_CHECK(!name.empty(), "save_safetensors {}: empty tensor name", where);
    ROTA_CHECK(name != "__metadata__", "save_safetensors {}: '__metadata__' is reserved", where);
    ROTA_CHECK(seen.insert(name).second, "save_safetensors {}: duplicate tensor name '{}'", where,
               name);
    ROTA_CHECK(tensor.defined(), "save_safetensors {}: tensor '{}' is undefined", where, name);
  }
  for (const char* key : {kMetadataFormat, kMetadataFormatVersion, kMetadataDataCrc}) {
    ROTA_CHECK(metadata.count(key) == 0,
               "save_safetensors {}: metadata key '{}' is reserved for Rota", where, key);
  }
}

/// The parts of a file: the 8-byte header size and header text, then the tensors' bytes.
struct FileParts {
  uint64_t header_size = 0;  // little-endian as stored (asserted above)
  std::string header_text;
  std::vector<Tensor> contiguous;  // the tensors in order, contiguous
};

FileParts file_parts(const std::string& where, const NamedTensors& tensors,
                     const SafetensorsMetadata& metadata) {
  check_inputs(where, tensors, metadata);
  FileParts parts;
  // Contiguous copies only of the tensors that need one; the rest are written in place.
  parts.contiguous.reserve(tensors.size());
  uint32_t data_crc = 0;
  for (const auto& entry : tensors) {
    parts.contiguous.push_back(entry.second.contiguous());
    const Tensor& t = parts.contiguous.back();
    if (t.nbytes() > 0) data_crc = crc32c(t.raw_data(), t.nbytes(), data_crc);
  }

  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  nlohmann::ordered_json meta = nlohmann::ordered_json::object();
  meta[kMetadataFormat] = "rota";
  meta[kMetadataFormatVersion] = std::to_string(kSafetensorsFormatVersion);
  meta[kMetadataDataCrc] = fmt::format("{:08x}", data_crc);
  for (const auto& [key, value] : metadata) meta[key] = value;
  header["__metadata__"] = std::move(meta);
  uint64_t offset = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = parts.contiguous[i];
    const uint64_t end = offset + t.nbytes();
    header[tensors[i].first] = {{"dtype", safetensors_dtype_name(t.dtype())},
                                {"shape", t.shape()},
                                {"data_offsets", {offset, end}}};
    offset = end;
  }
  parts.header_text = header.dump();
  // Padding the header to a multiple of 8 puts the data section on an 8-byte boundary, so a
  // memory-mapped reader can view every tensor in place.
  parts.header_text.append((8 - parts.header_text.size() % 8) % 8, ' ');
  parts.header_size = parts.header_text.size();
  return parts;
}

}  // namespace

void save_safetensors(const std::filesystem::path& path, const NamedTensors& tensors,
                      const SafetensorsMetadata& metadata) {
  const FileParts parts = file_parts(path.string(), tensors, metadata);
  AtomicFileWriter writer(path);
  writer.write(&parts.header_size, sizeof(parts.header_size));
  writer.write(parts.header_text);
  for (const Tensor& t : parts.contiguous) {
    if (t.nbytes() > 0) writer.write(t.raw_data(), t.nbytes());
  }
  writer.commit();
}

std::string encode_safetensors(const NamedTensors& tensors, const SafetensorsMetadata& metadata) {
  const FileParts parts = file_parts("(in memory)", tensors, metadata);
  std::string bytes(reinterpret_cast<const char*>(&parts.header_size), sizeof(parts.header_size));
  bytes += parts.header_text;
  for (const Tensor& t : parts.contiguous) {
    bytes.append(static_cast<const char*>(t.raw_data()), t.nbytes());
  }
  return bytes;
}

void save_safetensors(const std::filesystem::path& path, const StateDict& tensors,
                      const SafetensorsMetadata& metadata) {
  save_safetensors(path, NamedTensors(tensors.begin(), tensors.end()), metadata);
}

}  // namespace rota::io
