// The algorithm a serialized SentencePiece model was trained with, read from its protobuf bytes.
#pragma once

#include <string>
#include <string_view>

namespace rota::data {

/// "unigram", "bpe", "word" or "char": TrainerSpec.model_type (ModelProto field 2, TrainerSpec
/// field 3; UNIGRAM when absent, as SentencePiece defaults). Read straight from the wire format
/// (the protobuf classes of Debian's libsentencepiece are not installed). Throws rota::Error
/// when the bytes are not a well-formed message.
std::string sentencepiece_model_type(std::string_view serialized_model);

}  // namespace rota::data
