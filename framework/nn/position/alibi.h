// ALiBi: fixed per-head linear distance biases b_ij = −m_h·|t_ij| for softmax attention.
#pragma once

#include <vector>

#include "framework/nn/attention/attention_call.h"

namespace rota::nn {

/// Per-head slopes m_h (encodings.md section 7, the ALiBi reference's recursion in closed form):
///   H a power of two: m_h = 2^(−8(h+1)/H), h = 0 … H−1;
///   otherwise, with c the largest power of two below H: the c slopes of the c-head model,
///   then 2^(−4(2h+1)/c) for h = 0, 1, … (positions 0, 2, 4, … of the 2c-head model),
///   appended until there are H slopes. E.g. H = 3 → [1/16, 1/256, 1/4].
std::vector<double> alibi_slopes(int64_t heads);

/// ALiBi as a bias-only relative encoding, no parameters:
///   ℓ_ij = s·q_i·k_j − m_h·|t_ij|,  t_ij = j − i − query_offset.
/// The symmetric form is used for causal and non-causal attention alike (on visible causal
/// entries it equals the paper's m_h·t_ij). The bias is a Toeplitz view of a [H, Nq+Nk−1]
/// table, so it costs no N×N memory.
class Alibi : public RelativeAttentionEncoding {
 public:
  explicit Alibi(int64_t heads);

  /// [H, Nq + Nk − 1]: row r ↔ t = r − (Nq − 1) − query_offset, value −m_h·|t|.
  Tensor table(int64_t nq, int64_t nk, int64_t query_offset, DType dtype) const;
  /// [1, H, Nq, Nk] bias b[0, h, i, j] = −m_h·|j − i − query_offset| (a view of table()).
  Tensor bias(int64_t nq, int64_t nk, int64_t query_offset, DType dtype) const;

  /// q: [B, H, Nq, D], k: [B, H, Nk, D], v: [B, H, Nk, Dv] → [B, H, Nq, Dv].
  Variable attend(const Variable& q, const Variable& k, const Variable& v,
                  const AttentionCall& call) const override;

  int64_t heads() const { return static_cast<int64_t>(slopes_.size()); }
  const std::vector<double>& slopes() const { return slopes_; }

 private:
  std::vector<double> slopes_;
};

}  // namespace rota::nn
