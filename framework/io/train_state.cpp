// TrainState encoding with a trailing CRC-32C field, and RNG stream capture/restore.
#include "framework/io/train_state.h"

#include <cstring>

#include "framework/base/error.h"
#include "framework/io/crc32c.h"

namespace rota::io {
namespace {

// Wire tag of `fixed32 crc32c = 15`: (field number << 3) | wire type 5 (32-bit), one byte.
constexpr unsigned char kCrcTag = (15u << 3) | 5u;
constexpr size_t kCrcFieldBytes = 5;

}  // namespace

std::string encode_train_state(const TrainState& state) {
  TrainState copy = state;
  copy.set_version(copy.has_base_weights() ? 2 : 1);
  copy.clear_crc32c();
  std::string bytes;
  ROTA_CHECK(copy.SerializeToString(&bytes), "encode_train_state: serialization failed");
  // Appending the field by hand (rather than setting it and serializing again) guarantees it
  // is the last bytes of the file whatever field numbers are added later; protobuf parsers
  // accept fields in any order, so the file stays a plain TrainState message.
  const uint32_t crc = crc32c(bytes);
  bytes.push_back(static_cast<char>(kCrcTag));
  for (int i = 0; i < 4; ++i) bytes.push_back(static_cast<char>((crc >> (8 * i)) & 0xFFu));
  return bytes;
}

TrainState decode_train_state(std::string_view bytes, const std::string& name) {
  ROTA_CHECK(bytes.size() >= kCrcFieldBytes,
             "train state {}: truncated ({} bytes, too short to hold its checksum)", name,
             bytes.size());
  const size_t body_size = bytes.size() - kCrcFieldBytes;
  const auto* tail = reinterpret_cast<const unsigned char*>(bytes.data()) + body_size;
  ROTA_CHECK(tail[0] == kCrcTag,
             "train state {}: no checksum at the end of the file (truncated or corrupted)", name);
  uint32_t stored = 0;
  for (int i = 0; i < 4; ++i) stored |= static_cast<uint32_t>(tail[1 + i]) << (8 * i);
  const uint32_t actual = crc32c(bytes.data(), body_size);
  ROTA_CHECK(stored == actual,
             "train state {}: checksum mismatch (stored crc32c {:08x}, data has {:08x}): the "
             "file is corrupted",
             name, stored, actual);
  ROTA_CHECK(bytes.size() < (1u << 30), "train state {}: implausibly large ({} bytes)", name,
             bytes.size());
  TrainState state;
  ROTA_CHECK(state.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())),
             "train state {}: not a valid TrainState message", name);
  ROTA_CHECK(state.version() != 0, "train state {}: no version field", name);
  ROTA_CHECK(state.version() <= kTrainStateVersion,
             "train state {}: version {} is newer than this build reads ({})", name,
             state.version(), kTrainStateVersion);
  return state;
}

void save_rng_state(TrainState& state, const std::string& name, const Generator& generator) {
  RngState* entry = nullptr;
  for (auto& existing : *state.mutable_rng_states()) {
    if (existing.name() == name) entry = &existing;
  }
  if (entry == nullptr) {
    entry = state.add_rng_states();
    entry->set_name(name);
  }
  entry->clear_words();
  for (uint64_t word : generator.state()) entry->add_words(word);
}

void restore_rng_state(const TrainState& state, const std::string& name, Generator& generator) {
  for (const auto& entry : state.rng_states()) {
    if (entry.name() != name) continue;
    Generator::State words{};
    ROTA_CHECK(entry.words_size() == static_cast<int>(words.size()),
               "restore_rng_state: stream '{}' has {} words, expected {}", name, entry.words_size(),
               words.size());
    for (size_t i = 0; i < words.size(); ++i) words[i] = entry.words(static_cast<int>(i));
    generator.set_state(words);
    return;
  }
  fail("restore_rng_state: the train state has no random stream '{}'", name);
}

}  // namespace rota::io
