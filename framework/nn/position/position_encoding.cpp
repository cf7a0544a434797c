// What each positional encoding applies to, and its name for messages.
#include "framework/nn/position/position_encoding.h"

#include <iterator>

namespace rota::nn {

namespace {

template <typename... T>
bool holds_any(const PositionEncoding& position) {
  return (std::holds_alternative<T>(position) || ...);
}

}  // namespace

bool is_absolute(const PositionEncoding& position) {
  return holds_any<SinusoidalPosition, LearnedPosition>(position);
}

bool acts_on_linear_features(const PositionEncoding& position) {
  return holds_any<RopePosition, LrpeOptions, PermuteFormerPosition>(position);
}

bool applies_to_linear(const PositionEncoding& position) {
  return std::holds_alternative<NoPosition>(position) || is_absolute(position) ||
         acts_on_linear_features(position);
}

bool applies_to_softmax(const PositionEncoding& position) {
  return !holds_any<LrpeOptions, PermuteFormerPosition>(position);
}

const char* position_encoding_name(const PositionEncoding& position) {
  // In the order of the variant's alternatives.
  static constexpr const char* kNames[] = {
      "none", "sinusoidal", "learned_absolute", "rope", "lrpe", "permute_former", "alibi",
      "t5",   "shaw",       "transformer_xl",   "skew",
  };
  static_assert(std::size(kNames) == std::variant_size_v<PositionEncoding>);
  return kNames[position.index()];
}

}  // namespace rota::nn
