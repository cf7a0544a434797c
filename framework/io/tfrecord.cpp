// TFRecord framing: writer and a checking reader (used by tests and by anyone reading events).
#include "framework/io/tfrecord.h"

#include <cstdint>
#include <cstring>

#include "framework/base/error.h"
#include "framework/base/file_io.h"
#include "framework/io/crc32c.h"

namespace rota::io {
namespace {

void append_le(std::string& out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xFFu));
}

uint64_t load_le(const char* p, int bytes) {
  uint64_t value = 0;
  for (int i = 0; i < bytes; ++i) {
    value |= static_cast<uint64_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  }
  return value;
}

}  // namespace

std::string frame_tfrecord(std::string_view payload) {
  std::string out;
  out.reserve(payload.size() + 16);
  append_le(out, payload.size(), 8);
  append_le(out, mask_crc32c(crc32c(out.data(), 8)), 4);
  out.append(payload);
  append_le(out, mask_crc32c(crc32c(payload)), 4);
  return out;
}

std::vector<std::string> parse_tfrecords(std::string_view bytes, const std::string& name) {
  std::vector<std::string> records;
  size_t offset = 0;
  while (offset < bytes.size()) {
    const size_t index = records.size();
    ROTA_CHECK(bytes.size() - offset >= 12,
               "tfrecord {}: record {} at byte {} is truncated (no room for its length header)",
               name, index, offset);
    const char* p = bytes.data() + offset;
    const uint64_t length = load_le(p, 8);
    ROTA_CHECK(unmask_crc32c(static_cast<uint32_t>(load_le(p + 8, 4))) == crc32c(p, 8),
               "tfrecord {}: record {} at byte {}: length CRC mismatch (corrupted)", name, index,
               offset);
    ROTA_CHECK(length <= bytes.size() - offset - 12 && bytes.size() - offset - 12 - length >= 4,
               "tfrecord {}: record {} at byte {} is truncated ({} payload bytes announced)", name,
               index, offset, length);
    const std::string_view payload = bytes.substr(offset + 12, length);
    ROTA_CHECK(unmask_crc32c(static_cast<uint32_t>(load_le(p + 12 + length, 4))) == crc32c(payload),
               "tfrecord {}: record {} at byte {}: payload CRC mismatch (corrupted)", name, index,
               offset);
    records.emplace_back(payload);
    offset += 16 + length;
  }
  return records;
}

std::vector<std::string> read_tfrecords(const std::filesystem::path& path) {
  return parse_tfrecords(read_file(path), path.string());
}

}  // namespace rota::io
