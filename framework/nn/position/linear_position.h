// The positional encodings of the linear-attention family, selectable by name.
#pragma once

#include <string>

namespace rota::nn {

/// Where each encoding acts: absolute ones are added to the token embeddings by the model;
/// the others transform the attention features inside every LinearAttention layer.
enum class LinearPositionEncoding {
  kNone,           // "nope": no position information
  kSinusoidal,     // "sinusoidal": fixed absolute embedding added to the input
  kLearned,        // "learned": trainable absolute embedding (cannot extrapolate)
  kRope,           // "rope": Type 2 + identity P + frozen θ
  kPermuteFormer,  // "permute_former": π^s before φ plus per-head decay
  kLrpe,           // "lrpe": LrpeOptions choose Type × P × θ mode
};

/// Parses "nope" (or "none"), "sinusoidal", "learned", "rope", "permute_former" (or "per"),
/// "lrpe"; throws listing the valid names otherwise.
LinearPositionEncoding parse_linear_position_encoding(const std::string& name);
const char* linear_position_encoding_name(LinearPositionEncoding encoding);
/// True for the encodings that act inside attention (rope, permute_former, lrpe).
bool acts_on_features(LinearPositionEncoding encoding);

}  // namespace rota::nn
