// Data-dependent gates of the linear-attention state: GLA, Mamba-2 (SSD), learnable decay, delta β.
#pragma once

#include <memory>
#include <vector>

#include "framework/nn/linear.h"

namespace rota::nn {

/// Which data-dependent decay multiplies the causal state before each token is added.
enum class StateGating {
  kNone,
  kGla,  // per key channel: α_t = σ(x W_down W_up + b)^(1/τ) (Yang et al. 2023, GLA)
  kSsd,  // per head: a_t = exp(−Δ_t·A_h), Δ_t = softplus(x w_h + b_h), keys scaled by Δ_t
         // (Dao & Gu 2024, Mamba-2's scalar SSD)
};

/// How a token is written into the state.
enum class UpdateRule {
  kAdditive,  // S_t = a_t S_{t−1} + k_tᵀ v_t
  kDelta,     // S_t = a_t (I − β_t k_tᵀ k_t) S_{t−1} + β_t k_tᵀ v_t, keys and queries
              // L2-normalised (Schlag et al. 2021; Yang et al. 2024, DeltaNet / Gated DeltaNet)
};

struct StateGateOptions {
  StateGating gating = StateGating::kNone;
  UpdateRule rule = UpdateRule::kAdditive;
  int64_t gla_rank = 16;        // r of W_down [E, r], W_up [r, H·F]
  double gla_temperature = 16;  // τ
  /// Learnable per-head decay (LRPE-d's option): log γ_h = −exp(w_h), w_h initialised from
  /// these rates (one per head, in (0, 1)); empty = none.
  std::vector<double> learnable_decay;
};

/// The gate parameters of one attention layer, for inputs x: [B, N, E] and H heads of key
/// feature dimension F. Children / parameters: GLA `gate_down` (no bias), `gate_up`; SSD
/// `dt_proj` (no bias), `dt_bias` [H], `a_log` [H]; delta rule `beta_proj`; learnable decay
/// `decay_log_rate` [H].
/// Roles (weight decay): the projections' matrices are weights, every vector (their biases,
/// a_log, dt_bias, decay_log_rate) a bias, so only the matrices decay by default.
class StateGate : public Module {
 public:
  StateGate(const StateGateOptions& options, int64_t dim, int64_t heads, int64_t feature_dim,
            const WeightInit& projection_init, DType dtype, Generator& gen);

  /// Whether the additive kernel needs gates at all (GLA, SSD or a learnable decay).
  bool has_log_gate() const;
  /// log a_t ≤ 0: [B, H, N, F] (GLA) or [B, H, N, 1] (SSD, learnable decay); undefined when the
  /// state is not gated.
  Variable log_gate(const Variable& x) const;
  /// SSD's Δ_t scaling the keys: [B, H, N, 1]; undefined otherwise.
  Variable key_scale(const Variable& x) const;
  /// The delta rule's β_t = σ(x w_h + b_h) ∈ (0, 1): [B, H, N]; undefined for kAdditive.
  Variable beta(const Variable& x) const;

  const StateGateOptions& options() const { return options_; }

 private:
  /// Δ_t = softplus(x w_h + b_h): [B, H, N, 1].
  Variable delta_t(const Variable& x) const;

  StateGateOptions options_;
  int64_t heads_ = 1;
  int64_t feature_dim_ = 1;
  std::shared_ptr<Linear> gate_down_, gate_up_, dt_proj_, beta_proj_;
  Variable dt_bias_, a_log_, decay_log_rate_;
};

/// log σ(z) = min(z, 0) − log(1 + e^(−|z|)), finite for every z.
Variable log_sigmoid(const Variable& z);
/// softplus(z) = max(z, 0) + log(1 + e^(−|z|)).
Variable softplus(const Variable& z);
/// x / √(Σ_last x² + eps) over the last dim.
Variable l2_normalize(const Variable& x, double eps = 1e-6);

}  // namespace rota::nn
