// safetensors files: named tensors behind a JSON header, readable by a few lines of numpy.
//
// Layout (as the safetensors format defines it):
//   u64 little-endian N | N bytes of JSON header, space-padded to a multiple of 8 | data
// The header maps each name to {"dtype": "F32"|"F64"|"BF16"|"I32"|"I64", "shape": [...],
// "data_offsets": [begin, end]} (offsets relative to the data section, little-endian C order)
// plus "__metadata__": a string -> string map. Rota writes "format": "rota",
// "format_version": "1" and "data_crc32c" (8 hex digits, CRC-32C of the whole data section).
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "framework/tensor/state_dict.h"
#include "framework/tensor/tensor.h"

namespace rota::io {

/// Name -> tensor in a fixed order (what Optimizer::state_tensors() returns).
using NamedTensors = std::vector<std::pair<std::string, Tensor>>;
/// The "__metadata__" map of a safetensors header.
using SafetensorsMetadata = std::map<std::string, std::string>;

/// Metadata keys Rota sets itself (a caller may not set them).
inline constexpr char kMetadataFormat[] = "format";                 // "rota"
inline constexpr char kMetadataFormatVersion[] = "format_version";  // "1"
inline constexpr char kMetadataDataCrc[] = "data_crc32c";           // e.g. "e3069283"
inline constexpr int kSafetensorsFormatVersion = 1;

/// The safetensors dtype string ("F32", "BF16", ...) of a Rota dtype.
const char* safetensors_dtype_name(DType dtype);

/// Writes `tensors` (in the given order; non-contiguous ones are written contiguously) with
/// `metadata` plus Rota's own keys. The write is atomic and durable: `<path>.tmp`, fsync,
/// rename, fsync of the directory. Throws on an empty or duplicate name, the reserved name
/// "__metadata__", an undefined tensor, or a reserved metadata key.
void save_safetensors(const std::filesystem::path& path, const NamedTensors& tensors,
                      const SafetensorsMetadata& metadata = {});
void save_safetensors(const std::filesystem::path& path, const StateDict& tensors,
                      const SafetensorsMetadata& metadata = {});
/// The bytes save_safetensors would write (for a file kept in memory, e.g. a checkpoint's extra
/// file); parse_safetensors reads them back.
std::string encode_safetensors(const NamedTensors& tensors,
                               const SafetensorsMetadata& metadata = {});

/// A loaded file: tensors in data order (the order they were written) and the metadata.
struct SafetensorsContent {
  StateDict tensors;
  SafetensorsMetadata metadata;
};

/// Reads and validates a safetensors file. Refuses, with a message naming the file and the
/// reason: a file shorter than its header, a header length past the end, malformed JSON or a
/// header not of the form above, an unknown dtype, data offsets out of range, overlapping,
/// leaving gaps or not matching shape x dtype size, and a data section whose CRC-32C differs
/// from "data_crc32c" (required in files that say "format": "rota"; files from other writers
/// without it are read unchecked).
SafetensorsContent load_safetensors(const std::filesystem::path& path);
/// The same for bytes already in memory; `name` stands for the file in error messages.
SafetensorsContent parse_safetensors(std::string_view bytes, const std::string& name);

}  // namespace rota::io
