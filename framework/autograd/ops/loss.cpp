// Cross-entropy op: fused forward kernel; the backward recomputes the softmax from the logits.
#include "framework/autograd/ops/loss.h"

#include "framework/autograd/function.h"

namespace rota {

namespace b = backend;

Variable cross_entropy(const Variable& logits, const Tensor& targets, int64_t ignore_index,
                       double label_smoothing, Reduction reduction) {
  const b::CrossEntropyOptions options{ignore_index, label_smoothing, reduction};
  b::CrossEntropyForward fwd = b::cross_entropy_forward(logits.data(), targets, options);
  if (!inspect_inputs({logits}).any) return Variable(std::move(fwd.loss), false);
  return record_op(
      "cross_entropy", fwd.loss, {logits},
      [options, z = logits.data(), targets, lse = fwd.logsumexp,
       valid = fwd.valid_rows](const Tensor& g) {
        return std::vector<Tensor>{b::cross_entropy_backward(g, z, targets, lse, valid, options)};
      });
}

}  // namespace rota
