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

void check_inputs(const std::filesystem::path& path, const NamedTensors& tensors,
                  const SafetensorsMetadata& metadata) {
  std::set<std::string_view> seen;
  for (const auto& [name, tensor] : tensors) {
    ROTA_CHECK(!name.empty(), "save_safetensors {}: empty tensor name", path.string());
    ROTA_CHECK(name != "__metadata__", "save_safetensors {}: '__metadata__' is reserved",
               path.string());
    ROTA_CHECK(seen.insert(name).second, "save_safetensors {}: duplicate tensor name '{}'",
               path.string(), name);
    ROTA_CHECK(tensor.defined(), "save_safetensors {}: tensor '{}' is undefined", path.string(),
               name);
  }
  for (const char* key : {kMetadataFormat, kMetadataFormatVersion, kMetadataDataCrc}) {
    ROTA_CHECK(metadata.count(key) == 0,
               "save_safetensors {}: metadata key '{}' is reserved for Rota", path.string(), key);
  }
}

}  // namespace

void save_safetensors(const std::filesystem::path& path, const NamedTensors& tensors,
                      const SafetensorsMetadata& metadata) {
  check_inputs(path, tensors, metadata);

  // Contiguous copies only of the tensors that need one; the rest are written in place.
  std::vector<Tensor> contiguous;
  contiguous.reserve(tensors.size());
  uint32_t data_crc = 0;
  for (const auto& entry : tensors) {
    contiguous.push_back(entry.second.contiguous());
    const Tensor& t = contiguous.back();
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
    const Tensor& t = contiguous[i];
    const uint64_t end = offset + t.nbytes();
    header[tensors[i].first] = {{"dtype", safetensors_dtype_name(t.dtype())},
                                {"shape", t.shape()},
                                {"data_offsets", {offset, end}}};
    offset = end;
  }
  std::string header_text = header.dump();
  // Padding the header to a multiple of 8 puts the data section on an 8-byte boundary, so a
  // memory-mapped reader can view every tensor in place.
  header_text.append((8 - header_text.size() % 8) % 8, ' ');

  const uint64_t header_size = header_text.size();  // little-endian as stored (asserted above)
  AtomicFileWriter writer(path);
  writer.write(&header_size, sizeof(header_size));
  writer.write(header_text);
  for (const Tensor& t : contiguous) {
    if (t.nbytes() > 0) writer.write(t.raw_data(), t.nbytes());
  }
  writer.commit();
}

void save_safetensors(const std::filesystem::path& path, const StateDict& tensors,
                      const SafetensorsMetadata& metadata) {
  save_safetensors(path, NamedTensors(tensors.begin(), tensors.end()), metadata);
}

}  // namespace rota::io
