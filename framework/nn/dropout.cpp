// Dropout layer.
#include "framework/nn/dropout.h"

#include "framework/autograd/ops/dropout.h"

namespace rota::nn {

Dropout::Dropout(double p, std::shared_ptr<Generator> gen) : p_(p), gen_(std::move(gen)) {
  ROTA_CHECK(p >= 0.0 && p < 1.0, "Dropout: p must be in [0, 1), got {}", p);
  ROTA_CHECK(gen_ != nullptr || p == 0.0, "Dropout: a generator is required when p > 0");
}

Variable Dropout::forward(const Variable& x) const {
  if (!active()) return x;
  return dropout(x, p_, *gen_, true);
}

}  // namespace rota::nn
