// Shaw et al. 2018 relative position representations: clipped learned key (and value) tables.
#pragma once

#include <cstdint>
#include <vector>

#include "framework/nn/attention/attention_call.h"
#include "framework/tensor/random.h"

namespace rota::nn {

struct ShawOptions {
  int64_t head_dim = 0;     // D
  int64_t clip = 16;        // K: distances beyond ±K share the edge rows
  int64_t clip_left = -1;   // optional asymmetric clipping of the past (WeNet: 64); −1 = clip
  int64_t clip_right = -1;  // ... and of the future (WeNet: 8); −1 = clip
  bool values = false;      // also add E^V[κ(t_ij)] to the values (t2t); keys only by default
  DType dtype = DType::kF32;
};

/// Shaw et al. 2018 (encodings.md section 4), tables shared by all heads:
///   κ(t) = clip(t, −K_left, K_right) + K_left,  t_ij = j − i − query_offset,
///   ℓ_ij = s·q_i·(k_j + E^K[κ(t_ij)]),  o_i = Σ_j p_ij·(v_j + E^V[κ(t_ij)]) (with values).
/// Keys: X = Q·E^K_neededᵀ over only the table rows the block reaches (at most
/// min(K_left + K_right + 1, n_q + n_k − 1)), then the skew with a column map sending each
/// relative distance to its clipped row; the scaled result is the bias of the fused
/// softmax_attention kernel. Values need the probabilities, so that option runs the composed
/// path (attend_composed: explicit logits, masked softmax, dropout op, P·V plus
/// unskew(P)·E^V_needed, the spec's bucket form).
/// Parameters: `key_table` [K_left + K_right + 1, D] and, with values, `value_table` (same
/// shape); row r stands for the clipped distance r − K_left. Glorot-uniform init, bound
/// √(6 / (rows + D)).
class ShawRelativeEncoding : public RelativeAttentionEncoding {
 public:
  ShawRelativeEncoding(const ShawOptions& options, Generator& gen);
  Variable attend(const Variable& q, const Variable& k, const Variable& v,
                  const AttentionCall& call) const override;
  /// The same attention composed from autograd primitives (matmul, relative_shift, masked
  /// softmax, dropout op, relative_unshift); the only path for the value table and the
  /// reference the fused path is tested against. Rows with every key hidden give 0 like the
  /// fused kernel. Its dropout mask comes from the dropout op, not the fused kernel's stream.
  Variable attend_composed(const Variable& q, const Variable& k, const Variable& v,
                           const AttentionCall& call) const;

  /// κ(t): the table row of relative distance t.
  int64_t bucket(int64_t t) const;
  int64_t clip_left() const { return clip_left_; }
  int64_t clip_right() const { return clip_right_; }
  const Variable& key_table() const { return key_table_; }
  const Variable& value_table() const { return value_table_; }
  const ShawOptions& options() const { return options_; }

 private:
  /// The table rows a block reaches and where each relative distance goes among them.
  struct Buckets {
    int64_t first = 0;                // κ(t_min)
    int64_t count = 0;                // κ(t_max) − κ(t_min) + 1
    std::vector<int64_t> column_map;  // κ(t_min + r) − first, empty when it is the identity
  };
  Buckets buckets(int64_t n_q, int64_t n_k, int64_t query_offset) const;
  /// s·q_i·E^K[κ(t_ij)]: [B, H, Nq, Nk].
  Variable key_bias(const Variable& q, int64_t n_k, const AttentionCall& call,
                    const Buckets& b) const;

  ShawOptions options_;
  int64_t clip_left_ = 0;
  int64_t clip_right_ = 0;
  Variable key_table_;
  Variable value_table_;
};

}  // namespace rota::nn
