// tokenizer.json decoders: token strings back to text.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "data/tokenizer/huggingface/hf_json.h"

namespace rota::data::hf {

class Decoder {
 public:
  virtual ~Decoder() = default;
  /// Hugging Face's decode_chain: token strings in, strings out (joined by the caller).
  virtual std::vector<std::string> decode_chain(std::vector<std::string> tokens) const = 0;
};

/// Supported: ByteLevel WordPiece Metaspace BPEDecoder Replace ByteFallback Fuse Strip Sequence.
std::unique_ptr<Decoder> parse_decoder(const json& value, const JsonPath& at);
inline constexpr const char* kSupportedDecoders =
    "ByteLevel, WordPiece, Metaspace, BPEDecoder, Replace, ByteFallback, Fuse, Strip, Sequence";

}  // namespace rota::data::hf
