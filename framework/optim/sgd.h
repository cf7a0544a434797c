// Stochastic gradient descent with momentum, dampening, Nesterov and L2 weight decay (PyTorch).
#pragma once

#include "framework/optim/optimizer.h"

namespace rota::optim {

struct SgdOptions {
  double lr = 0.01;           // single-group constructor only (groups carry their own)
  double weight_decay = 0.0;  // single-group constructor only; L2: g += weight_decay * p
  double momentum = 0.0;
  double dampening = 0.0;
  bool nesterov = false;  // needs momentum > 0 and dampening == 0
};

/// torch.optim.SGD, per element (state "momentum_buffer" b only when momentum != 0):
///   g = grad + weight_decay * p
///   b = g                                        on a parameter's first update
///   b = momentum * b + (1 - dampening) * g       afterwards
///   g = nesterov ? g + momentum * b : b
///   p = p - lr * g
class SGD : public Optimizer {
 public:
  /// One group with options.lr and options.weight_decay.
  SGD(std::vector<Variable> params, const SgdOptions& options);
  /// Each group keeps its own lr and weight_decay; momentum, dampening, nesterov from options.
  SGD(std::vector<ParamGroup> groups, const SgdOptions& options);

  const char* name() const override { return "SGD"; }
  const SgdOptions& options() const { return options_; }

 protected:
  void update(const ParamGroup& group, const Tensor& param, const Tensor& grad,
              ParamState& state) override;
  std::vector<std::string> state_suffixes() const override { return {"momentum_buffer"}; }

 private:
  SgdOptions options_;
};

}  // namespace rota::optim
