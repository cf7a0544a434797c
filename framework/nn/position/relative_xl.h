// Transformer-XL / ESPnet relative attention: sinusoidal relative table, linear_pos, u and v.
#pragma once

#include <cstdint>
#include <memory>

#include "framework/nn/attention/attention_call.h"
#include "framework/nn/linear.h"
#include "framework/tensor/random.h"

namespace rota::nn {

/// Channel layout of the sinusoid pe(ρ), ω_c = base^(−2c/d_pe):
///   interleaved (ESPnet, WeNet): pe[2c] = sin(ρ·ω_c), pe[2c + 1] = cos(ρ·ω_c);
///   concatenated (Transformer-XL, RETURNN-common): pe[c] = sin(ρ·ω_c), pe[d_pe/2 + c] = cos(...).
enum class SinusoidLayout { kInterleaved, kConcatenated };

struct RelativeXlOptions {
  int64_t heads = 1;     // H
  int64_t head_dim = 0;  // D
  int64_t pe_dim = 0;    // d_pe (even); 0 = H·D (ESPnet)
  double base = 10000.0;
  SinusoidLayout layout = SinusoidLayout::kInterleaved;
  DType dtype = DType::kF32;
};

/// The sinusoid rows pe(ρ) for ρ = −t, t = t_min … t_min + count − 1 (ascending t, i.e.
/// descending ρ: ESPnet's own row order): [count, pe_dim], computed in double.
Tensor relative_sinusoids(int64_t t_min, int64_t count, int64_t pe_dim, double base,
                          SinusoidLayout layout, DType dtype);

/// Transformer-XL / ESPnet RelPositionMultiHeadedAttention (encodings.md section 5), per head h:
///   ℓ_ij = s·[(q_i + u_h)·k_j + (q_i + v_h)·p_h(ρ_ij)],  ρ_ij = −t_ij = i + query_offset − j,
/// p_h(ρ) = head h's D-block of W_pos·pe(ρ). Efficient form: the n_q + n_k − 1 rows pe(ρ) the
/// block reaches (rebuilt per call, so chunks and caches need nothing positional),
/// P = linear_pos(pe) scaled by s, X = (Q + v)·Pᵀ, BD = skew(X) — the general skew, valid
/// for any mask, n_q ≠ n_k and query_offset — as the bias of the fused kernel whose query is
/// Q + u. Children/parameters (ESPnet names): `linear_pos` (Linear d_pe → H·D, no bias, default
/// init), `pos_bias_u`, `pos_bias_v` [H, D] (xavier-uniform).
class RelativeXlEncoding : public RelativeAttentionEncoding {
 public:
  RelativeXlEncoding(const RelativeXlOptions& options, Generator& gen);
  Variable attend(const Variable& q, const Variable& k, const Variable& v,
                  const AttentionCall& call) const override;
  /// The positional term s·(q_i + v_h)·p_h(ρ_ij) (ESPnet's matrix_bd, scaled): [B, H, Nq, Nk].
  Variable position_bias(const Variable& q, int64_t n_k, const AttentionCall& call) const;
  /// P for the block's distances, p_h(ρ) for ρ = −t_min, −t_min − 1, …: [H, n_rel, D].
  Variable projected_positions(int64_t t_min, int64_t count) const;

  int64_t pe_dim() const { return pe_dim_; }
  const Linear& linear_pos() const { return *linear_pos_; }
  const Variable& pos_bias_u() const { return pos_bias_u_; }
  const Variable& pos_bias_v() const { return pos_bias_v_; }
  const RelativeXlOptions& options() const { return options_; }

 private:
  RelativeXlOptions options_;
  int64_t pe_dim_ = 0;
  std::shared_ptr<Linear> linear_pos_;
  Variable pos_bias_u_;
  Variable pos_bias_v_;
};

}  // namespace rota::nn
