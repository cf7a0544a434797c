// Generalised skew: learnable relative embeddings for any attention (+ shared q/k/v check).
#pragma once

#include <cstdint>

#include "framework/nn/attention/attention_call.h"
#include "framework/tensor/random.h"

namespace rota::nn {

namespace relative {

/// Throws unless q, k, v are [B, H, Nq, D], [B, H, Nk, D], [B, H, Nk, Dv] with D = head_dim
/// (and, for a positive `heads`, H = heads).
void check_qkv(const char* op, const Variable& q, const Variable& k, const Variable& v,
               int64_t head_dim, int64_t heads = 0);

}  // namespace relative

struct SkewOptions {
  int64_t head_dim = 0;   // D
  int64_t max_len = 0;    // L: the table covers t = −(L − 1) … L − 1 (2L − 1 rows)
  int64_t heads = 1;      // H (used only with per_head)
  bool per_head = false;  // one table per head instead of one shared by the heads
  DType dtype = DType::kF32;
};

/// "Relative positional embedding for any attention mechanism" (encodings.md 3.6): a
/// learnable E over the 2L − 1 relative distances, a_ij = q_i·E[t_ij], inside the scale:
///   ℓ_ij = s·(q_i·k_j + q_i·E[t_ij]),  t_ij = j − i − query_offset.
/// The blog post builds S = truncate(transpose(stack of the diagonals of Q·E)) over all 2L − 1
/// columns; the same map is the skew of X = Q·E_neededᵀ over only the n_q + n_k − 1 rows the
/// block can reach (section 3.1), which is what attend() computes. Valid for causal and
/// non-causal, self and cross attention, any query_offset, as long as every t of the block
/// lies inside the table (else an error naming the lengths and max_len).
/// Parameter `table`: [2L − 1, D] (or [H, 2L − 1, D] per head) in ascending-t row order,
/// row r ↔ t = r − (L − 1) (the blog's E is this table reversed and transposed);
/// glorot-uniform init as in the blog post.
class SkewRelativeEncoding : public RelativeAttentionEncoding {
 public:
  SkewRelativeEncoding(const SkewOptions& options, Generator& gen);
  Variable attend(const Variable& q, const Variable& k, const Variable& v,
                  const AttentionCall& call) const override;
  /// The scaled relative term s·q_i·E[t_ij] as a [B, H, Nq, Nk] bias.
  Variable relative_bias(const Variable& q, int64_t n_k, const AttentionCall& call) const;
  const Variable& table() const { return table_; }
  const SkewOptions& options() const { return options_; }

 private:
  SkewOptions options_;
  Variable table_;
};

}  // namespace rota::nn
