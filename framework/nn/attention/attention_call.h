// What every softmax-attention variant receives: scale, visibility, offsets, dropout; and the
// interface relative encodings implement (the logit formula of encodings.md section 1).
#pragma once

#include "framework/nn/module.h"
#include "framework/tensor/random.h"

namespace rota::nn {

/// How queries see keys. Query i sits at key position `query_offset + i` (encodings.md
/// section 2: 0 for self-attention and start-aligned blocks, n_k − n_q for the last n_q
/// positions of a longer key sequence, c·C − lo for a streaming chunk). Never inferred from
/// shapes.
struct AttentionCall {
  double scale = 1.0;        // s in ℓ_ij = s·(q_i·k_j + a_ij) + b_ij
  bool causal = false;       // key j visible only when j <= query_offset + i
  int64_t query_offset = 0;  // off
  int64_t window = 0;        // W >= 1: key j visible only when query_offset + i − j < W; 0: all
  Tensor key_padding_mask;   // undefined, or [B, Nk] with 0 for padding keys
  Tensor visibility_mask;    // undefined, or [Nq, Nk] with 0 where key j is hidden from query i
  Tensor segment_ids;        // undefined, or [B, Nk] packed documents: key j is hidden from
                             // query i unless segment_ids[b, j] == segment_ids[b, off + i]
  double dropout = 0.0;      // attention dropout on the probabilities (training only)
  Generator* generator = nullptr;  // dropout stream (required when dropout > 0 and training)
  bool training = false;
};

/// A relative positional encoding for softmax attention (Shaw, Transformer-XL, generalised
/// skew, T5, ALiBi, ...). The layer projects and splits heads, then calls attend().
class RelativeAttentionEncoding : public Module {
 public:
  std::optional<ParameterRole> parameter_role() const override {
    return ParameterRole::kPositional;
  }
  /// q: [B, H, Nq, D], k: [B, H, Nk, D], v: [B, H, Nk, Dv] (projected, unscaled).
  /// Returns the attention output [B, H, Nq, Dv] under this encoding's logit formula.
  virtual Variable attend(const Variable& q, const Variable& k, const Variable& v,
                          const AttentionCall& call) const = 0;
};

}  // namespace rota::nn
