// Reading TrainerSpec.model_type from a serialized SentencePiece ModelProto (see the header).
#include "data/tokenizer/sentencepiece_model_type.h"

#include <cstdint>

#include "framework/base/error.h"

namespace rota::data {
namespace {

// A cursor over protobuf wire-format bytes: varints and length-delimited fields.
class WireReader {
 public:
  explicit WireReader(std::string_view bytes) : bytes_(bytes) {}
  bool done() const { return at_ >= bytes_.size(); }

  uint64_t varint() {
    uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      ROTA_CHECK(at_ < bytes_.size(), "SentencePiece model: truncated varint");
      const auto byte = static_cast<uint8_t>(bytes_[at_++]);
      value |= static_cast<uint64_t>(byte & 0x7F) << shift;
      if ((byte & 0x80) == 0) return value;
    }
    fail("SentencePiece model: varint longer than 10 bytes");
  }

  std::string_view bytes(uint64_t length) {
    ROTA_CHECK(length <= bytes_.size() - at_, "SentencePiece model: field of {} bytes past the end",
               length);
    const std::string_view out = bytes_.substr(at_, length);
    at_ += length;
    return out;
  }

  // Skips a field's value of the given wire type.
  void skip(uint64_t wire_type) {
    switch (wire_type) {
      case 0:
        varint();
        return;
      case 1:
        bytes(8);
        return;
      case 2:
        bytes(varint());
        return;
      case 5:
        bytes(4);
        return;
      default:
        fail("SentencePiece model: unsupported wire type {}", wire_type);
    }
  }

 private:
  std::string_view bytes_;
  size_t at_ = 0;
};

// The last value of varint field `number` of a message (protobuf: the last one wins), if any.
bool last_varint(std::string_view message, uint64_t number, uint64_t& value) {
  WireReader reader(message);
  bool found = false;
  while (!reader.done()) {
    const uint64_t key = reader.varint();
    if (key >> 3 == number && (key & 7) == 0) {
      value = reader.varint();
      found = true;
    } else {
      reader.skip(key & 7);
    }
  }
  return found;
}

}  // namespace

std::string sentencepiece_model_type(std::string_view serialized_model) {
  WireReader reader(serialized_model);
  uint64_t type = 1;  // UNIGRAM
  while (!reader.done()) {
    const uint64_t key = reader.varint();
    if (key >> 3 == 2 && (key & 7) == 2) {  // trainer_spec (the last one merged over others)
      last_varint(reader.bytes(reader.varint()), 3, type);
    } else {
      reader.skip(key & 7);
    }
  }
  switch (type) {
    case 1:
      return "unigram";
    case 2:
      return "bpe";
    case 3:
      return "word";
    case 4:
      return "char";
    default:
      fail("SentencePiece model: unknown model_type {}", type);
  }
}

}  // namespace rota::data
