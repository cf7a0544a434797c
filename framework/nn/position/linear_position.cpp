// Names of the linear-attention positional encodings.
#include "framework/nn/position/linear_position.h"

#include "framework/base/error.h"

namespace rota::nn {

LinearPositionEncoding parse_linear_position_encoding(const std::string& name) {
  if (name == "nope" || name == "none") return LinearPositionEncoding::kNone;
  if (name == "sinusoidal") return LinearPositionEncoding::kSinusoidal;
  if (name == "learned") return LinearPositionEncoding::kLearned;
  if (name == "rope") return LinearPositionEncoding::kRope;
  if (name == "permute_former" || name == "per") return LinearPositionEncoding::kPermuteFormer;
  if (name == "lrpe") return LinearPositionEncoding::kLrpe;
  fail(
      "position encoding: unknown name '{}' (expected nope, sinusoidal, learned, rope, "
      "permute_former or lrpe)",
      name);
}

const char* linear_position_encoding_name(LinearPositionEncoding encoding) {
  switch (encoding) {
    case LinearPositionEncoding::kNone:
      return "nope";
    case LinearPositionEncoding::kSinusoidal:
      return "sinusoidal";
    case LinearPositionEncoding::kLearned:
      return "learned";
    case LinearPositionEncoding::kRope:
      return "rope";
    case LinearPositionEncoding::kPermuteFormer:
      return "permute_former";
    case LinearPositionEncoding::kLrpe:
      return "lrpe";
  }
  return "?";
}

bool acts_on_features(LinearPositionEncoding encoding) {
  return encoding == LinearPositionEncoding::kRope ||
         encoding == LinearPositionEncoding::kPermuteFormer ||
         encoding == LinearPositionEncoding::kLrpe;
}

}  // namespace rota::nn
