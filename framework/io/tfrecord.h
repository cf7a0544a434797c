// TFRecord framing (the container of TensorBoard event files): length, masked CRCs, payload.
//
// Each record: u64 length (LE) | u32 masked_crc32c(length bytes) | payload | u32
// masked_crc32c(payload)
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace rota::io {

/// One record, framed.
std::string frame_tfrecord(std::string_view payload);

/// Every record payload of a TFRecord file, checking both CRCs of each record. Refuses a
/// truncated record or a CRC mismatch, naming the file, the record index and its byte offset.
std::vector<std::string> read_tfrecords(const std::filesystem::path& path);
/// The same for bytes in memory; `name` stands for the file in error messages.
std::vector<std::string> parse_tfrecords(std::string_view bytes, const std::string& name);

}  // namespace rota::io
