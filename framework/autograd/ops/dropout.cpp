// Dropout op: forward and backward are the same seeded mask kernel applied to x and to grad.
#include "framework/autograd/ops/dropout.h"

#include "framework/autograd/function.h"
#include "framework/backend/primitives/dropout.h"

namespace rota {

Variable dropout(const Variable& x, double p, Generator& gen, bool training) {
  ROTA_CHECK(p >= 0.0 && p < 1.0, "dropout: p = {} is outside [0, 1)", p);
  if (!training || p == 0.0) return x;
  const uint64_t seed = gen.next_u64();
  Tensor y = backend::dropout_apply(x.data(), p, seed);
  if (!inspect_inputs({x}).any) return Variable(std::move(y), false);
  // Only (p, seed) is saved: the mask is a pure function of them and the element index.
  return record_op("dropout", y, {x}, [p, seed](const Tensor& g) {
    return std::vector<Tensor>{backend::dropout_apply(g, p, seed)};
  });
}

}  // namespace rota
