// Dropout layer: active in training mode only, drawing from a shared seeded stream.
#pragma once

#include <memory>

#include "framework/nn/module.h"
#include "framework/tensor/random.h"

namespace rota::nn {

/// Zeroes elements with probability p and scales the rest by 1/(1−p) while training.
/// The generator is shared (one dropout stream per model), so a checkpoint that saves its
/// state reproduces the masks exactly after resume.
class Dropout : public Module {
 public:
  Dropout(double p, std::shared_ptr<Generator> gen);
  Variable forward(const Variable& x) const;
  double p() const { return p_; }
  /// True when forward changes its input (training mode and p > 0).
  bool active() const { return is_training() && p_ != 0.0; }

 private:
  double p_;
  std::shared_ptr<Generator> gen_;
};

}  // namespace rota::nn
