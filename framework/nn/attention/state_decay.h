// Fixed per-head decay of the linear-attention state (RetNet, TransNormerLLM's LRPE-d).
#pragma once

#include <cstdint>
#include <vector>

namespace rota::nn {

/// Where a layer's per-head decay rates γ_h ∈ (0, 1) come from. With a decay the causal state
/// follows S_t = γ_h S_{t−1} + k̃_tᵀ v_t, so a pair (s, t ≤ s) is weighted by γ_h^(s−t).
enum class DecaySchedule {
  kNone,  // no decay (γ = 1)
  kRetNet,  // γ_h = 1 − 2^(−5−h), h = 0 … H−1 (Sun et al. 2023, RetNet's multi-scale decay)
  kTransNormer,  // γ_{h,l} = exp(−m_h·(1 − l/(L−1) + 10⁻⁵)): m_h ALiBi's slopes, l the layer
                 // (0-based) of L (Qin et al. 2023, TransNormerLLM's LRPE-d; L = 1 uses l/(L−1) =
                 // 0)
};

struct StateDecayOptions {
  DecaySchedule schedule = DecaySchedule::kNone;
  int64_t layer = 0;   // l, filled in by the model (kTransNormer)
  int64_t layers = 1;  // L, filled in by the model (kTransNormer)
  /// The rates become parameters initialised from the schedule (log γ_h = −e^(w_h), so they
  /// stay in (0, 1)); the layer then runs the gated kernel with one gate per head.
  bool learnable = false;
};

/// γ_h for each of `heads` heads (empty for kNone). Every rate is in (0, 1).
std::vector<double> state_decay_rates(const StateDecayOptions& options, int64_t heads);

/// The name for messages, as recipes spell it: "none", "retnet", "transnormer".
const char* decay_schedule_name(DecaySchedule schedule);

}  // namespace rota::nn
