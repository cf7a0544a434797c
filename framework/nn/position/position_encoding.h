// The one typed choice of positional encoding, for linear and softmax attention and the models.
#pragma once

#include <cstdint>
#include <optional>
#include <variant>

#include "framework/backend/fused/lrpe.h"
#include "framework/nn/position/lrpe.h"
#include "framework/nn/position/relative_xl.h"

namespace rota::nn {

/// NoPE: no position information at all.
struct NoPosition {};

/// Fixed sinusoidal absolute embedding (SinusoidalPositionEmbedding, absolute.h) added to the
/// token embeddings by the model: pe[s, 2i] = sin(s·ω_i), pe[s, 2i+1] = cos(s·ω_i),
/// ω_i = base^(−2i/E). Any length.
struct SinusoidalPosition {
  double base = 10000.0;
};

/// Trainable absolute embedding (LearnedPositionEmbedding, absolute.h) added to the token
/// embeddings by the model; positions past the table are an error.
struct LearnedPosition {
  int64_t max_positions = 512;
};

/// Rotary embedding: LRPE Type 2, identity P, frozen θ_k = base^(−2k/D) (rope_options). Linear
/// attention rotates the features after φ; softmax attention rotates q and k.
struct RopePosition {
  backend::LrpePairing pairing = backend::LrpePairing::kAdjacent;  // (2k, 2k+1) or (k, k+D/2)
  double base = 10000.0;
  RopeScaling scaling;  // of θ (none: θ_k as above)
};

// LRPE is LrpeOptions (lrpe.h): Type × P × θ mode; the layer fills in head_dim and dtype.
// Linear attention only.

/// PermuteFormer: π^s before φ plus a per-head decay (permute_former.h). Linear attention only.
struct PermuteFormerPosition {};

/// ALiBi: b_ij = −m_h·|t_ij| (alibi.h). Softmax attention only.
struct AlibiPosition {};

/// T5 relative bias: a learned scalar per (distance bucket, head) (t5_bias.h). Softmax only.
struct T5Position {
  int64_t buckets = 32;
  int64_t max_distance = 128;
  std::optional<bool> bidirectional = std::nullopt;  // unset: bidirectional unless causal
};

/// Shaw et al. 2018: clipped learned key (and value) tables (shaw.h). Softmax only.
struct ShawPosition {
  int64_t clip = 16;
  std::optional<int64_t> clip_left = std::nullopt;   // unset: clip
  std::optional<int64_t> clip_right = std::nullopt;  // unset: clip
  bool values = false;                               // also the value table
};

/// Transformer-XL / ESPnet relative attention (relative_xl.h). Softmax only.
struct TransformerXlPosition {
  int64_t pe_dim = 0;  // width of the sinusoid table; 0 = H·D
  SinusoidLayout layout = SinusoidLayout::kInterleaved;
  double base = 10000.0;
};

/// Generalised skew: a learnable embedding per relative distance (skew.h). Softmax only.
struct SkewPosition {
  int64_t max_len = 512;  // distances −(max_len − 1) … max_len − 1
  bool per_head = false;  // one table per head instead of one shared by the heads
};

/// Every positional encoding Rota has. Absolute ones (sinusoidal, learned) are added to the
/// token embeddings by the model and leave the attention without an encoding; RoPE works in
/// both attention families; LRPE and PermuteFormer act on linear-attention features; ALiBi,
/// T5, Shaw, Transformer-XL and the skew are softmax-attention encodings. The layers refuse
/// the ones that do not apply to them (rota::Error naming the encoding).
using PositionEncoding = std::variant<NoPosition, SinusoidalPosition, LearnedPosition, RopePosition,
                                      LrpeOptions, PermuteFormerPosition, AlibiPosition, T5Position,
                                      ShawPosition, TransformerXlPosition, SkewPosition>;

/// Sinusoidal or learned: added to the token embeddings, nothing inside attention.
bool is_absolute(const PositionEncoding& position);
/// RoPE, LRPE or PermuteFormer: transforms linear-attention features.
bool acts_on_linear_features(const PositionEncoding& position);
/// Accepted by linear attention: none, absolute, or one acting on its features.
bool applies_to_linear(const PositionEncoding& position);
/// Accepted by softmax attention: everything but LRPE and PermuteFormer.
bool applies_to_softmax(const PositionEncoding& position);
/// The name for messages, as recipes spell the encoding: "none", "sinusoidal",
/// "learned_absolute", "rope", "lrpe", "permute_former", "alibi", "t5", "shaw",
/// "transformer_xl", "skew".
const char* position_encoding_name(const PositionEncoding& position);

}  // namespace rota::nn
