// State gates: GLA's low-rank per-channel gates, Mamba-2's Δ·A decay, learnable decay, delta β.
#include "framework/nn/attention/state_gate.h"

#include <cmath>

#include "framework/autograd/ops/elementwise.h"
#include "framework/autograd/ops/reduce.h"
#include "framework/autograd/ops/shape.h"
#include "framework/nn/init.h"

namespace rota::nn {

Variable log_sigmoid(const Variable& z) {
  return clamp_max(z, 0.0) - log(add_scalar(exp(neg(abs(z))), 1.0));
}

Variable softplus(const Variable& z) {
  return clamp_min(z, 0.0) + log(add_scalar(exp(neg(abs(z))), 1.0));
}

Variable l2_normalize(const Variable& x, double eps) {
  return x * rsqrt(add_scalar(sum(square(x), {-1}, true), eps));
}

StateGate::StateGate(const StateGateOptions& options, int64_t dim, int64_t heads,
                     int64_t feature_dim, const WeightInit& projection_init, DType dtype,
                     Generator& gen)
    : options_(options), heads_(heads), feature_dim_(feature_dim) {
  ROTA_CHECK(options.gating != StateGating::kGla || options.rule == UpdateRule::kAdditive,
             "StateGate: GLA's per-channel gates do not combine with the delta rule (Gated "
             "DeltaNet gates per head: use the SSD gate)");
  ROTA_CHECK(options.learnable_decay.empty() || options.gating == StateGating::kNone,
             "StateGate: a learnable decay does not combine with data-dependent gates");
  if (options.gating == StateGating::kGla) {
    ROTA_CHECK(options.gla_rank >= 1 && options.gla_temperature > 0,
               "StateGate: GLA needs rank >= 1 and temperature > 0, got {} and {}",
               options.gla_rank, options.gla_temperature);
    gate_down_ = register_module(
        "gate_down", std::make_shared<Linear>(
                         LinearOptions{dim, options.gla_rank, false, dtype, projection_init}, gen));
    gate_up_ = register_module(
        "gate_up", std::make_shared<Linear>(LinearOptions{options.gla_rank, heads * feature_dim,
                                                          true, dtype, projection_init},
                                            gen));
  } else if (options.gating == StateGating::kSsd) {
    dt_proj_ = register_module(
        "dt_proj",
        std::make_shared<Linear>(LinearOptions{dim, heads, false, dtype, projection_init}, gen));
    // Mamba-2's initialisation: A_h ~ U[1, 16], Δ's bias so that softplus(b_h) = Δ_h with
    // log Δ_h ~ U[log 1e−3, log 1e−1] (b = Δ + log(1 − e^(−Δ)), the inverse softplus).
    std::vector<double> a_log(heads), dt_bias(heads);
    const Tensor a = init::uniform_(Tensor::empty({heads}, DType::kF64), gen, 1.0, 16.0);
    const Tensor u = init::uniform_(Tensor::empty({heads}, DType::kF64), gen, 0.0, 1.0);
    for (int64_t h = 0; h < heads; ++h) {
      a_log[h] = std::log(a.data<double>()[h]);
      const double dt = std::exp(std::log(1e-3) + u.data<double>()[h] * std::log(100.0));
      dt_bias[h] = dt + std::log(-std::expm1(-dt));
    }
    a_log_ = register_parameter("a_log", tensor_from(a_log, {heads}, dtype));
    dt_bias_ = register_parameter("dt_bias", tensor_from(dt_bias, {heads}, dtype));
  }
  if (!options.learnable_decay.empty()) {
    ROTA_CHECK(static_cast<int64_t>(options.learnable_decay.size()) == heads,
               "StateGate: {} learnable decay rates for {} heads", options.learnable_decay.size(),
               heads);
    std::vector<double> w;
    for (const double gamma : options.learnable_decay) {
      ROTA_CHECK(gamma > 0 && gamma < 1, "StateGate: decay rate {} outside (0, 1)", gamma);
      w.push_back(std::log(-std::log(gamma)));  // log γ = −e^w
    }
    decay_log_rate_ = register_parameter("decay_log_rate", tensor_from(w, {heads}, dtype));
  }
  if (options.rule == UpdateRule::kDelta) {
    beta_proj_ = register_module(
        "beta_proj",
        std::make_shared<Linear>(LinearOptions{dim, heads, true, dtype, projection_init}, gen));
  }
}

bool StateGate::has_log_gate() const {
  return options_.gating != StateGating::kNone || decay_log_rate_.defined();
}

Variable StateGate::delta_t(const Variable& x) const {
  // [B, N, E] → [B, N, H] → [B, H, N, 1]
  const Variable z = dt_proj_->forward(x) + dt_bias_;
  return unsqueeze(permute(softplus(z), {0, 2, 1}), -1);
}

Variable StateGate::log_gate(const Variable& x) const {
  const int64_t b = x.size(0), n = x.size(1);
  if (options_.gating == StateGating::kGla) {
    // [B, N, E] → [B, N, H·F] → [B, H, N, F]
    const Variable z = gate_up_->forward(gate_down_->forward(x));
    const Variable g = log_sigmoid(z) * (1.0 / options_.gla_temperature);
    return permute(reshape(g, {b, n, heads_, feature_dim_}), {0, 2, 1, 3});
  }
  if (options_.gating == StateGating::kSsd) {
    const Variable a = reshape(exp(a_log_), {1, heads_, 1, 1});
    return neg(delta_t(x) * a);
  }
  if (decay_log_rate_.defined()) {
    const Variable per_head = reshape(neg(exp(decay_log_rate_)), {1, heads_, 1, 1});
    return contiguous(expand(per_head, {b, heads_, n, 1}));
  }
  return Variable();
}

Variable StateGate::key_scale(const Variable& x) const {
  return options_.gating == StateGating::kSsd ? delta_t(x) : Variable();
}

Variable StateGate::beta(const Variable& x) const {
  if (options_.rule != UpdateRule::kDelta) return Variable();
  return permute(sigmoid(beta_proj_->forward(x)), {0, 2, 1});  // [B, N, H] → [B, H, N]
}

}  // namespace rota::nn
