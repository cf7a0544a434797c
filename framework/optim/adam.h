// Adam (L2 weight decay added to the gradient) and AdamW (decoupled weight decay), as PyTorch.
#pragma once

#include "framework/optim/optimizer.h"

namespace rota::optim {

struct AdamOptions {
  double lr = 1e-3;           // single-group constructor only (groups carry their own)
  double weight_decay = 0.0;  // single-group constructor only
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  /// false: Adam (g += weight_decay * p); true: AdamW (p *= 1 - lr * weight_decay first).
  bool decoupled_weight_decay = false;
};

/// torch.optim.Adam / AdamW (amsgrad = false), per element, with t = this parameter's update
/// count and state m = "exp_avg", v = "exp_avg_sq" (both start at 0):
///   Adam:  g = grad + weight_decay * p          AdamW: p = p * (1 - lr * weight_decay), g = grad
///   m = m + (1 - beta1) * (g - m)
///   v = beta2 * v + (1 - beta2) * g * g
///   p = p - (lr / (1 - beta1^t)) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
class Adam : public Optimizer {
 public:
  /// One group with options.lr and options.weight_decay.
  Adam(std::vector<Variable> params, const AdamOptions& options);
  /// Each group keeps its own lr and weight_decay; betas and eps from options.
  Adam(std::vector<ParamGroup> groups, const AdamOptions& options);

  const char* name() const override { return options_.decoupled_weight_decay ? "AdamW" : "Adam"; }
  const AdamOptions& options() const { return options_; }

 protected:
  void update(const ParamGroup& group, const Tensor& param, const Tensor& grad,
              ParamState& state) override;
  std::vector<std::string> state_suffixes() const override { return {"exp_avg", "exp_avg_sq"}; }

 private:
  AdamOptions options_;
};

/// Adam with decoupled weight decay (options.decoupled_weight_decay is forced on). Note the
/// default weight_decay is 0 here too (PyTorch's AdamW defaults to 0.01): set it explicitly.
class AdamW : public Adam {
 public:
  AdamW(std::vector<Variable> params, AdamOptions options);
  AdamW(std::vector<ParamGroup> groups, AdamOptions options);
};

}  // namespace rota::optim
