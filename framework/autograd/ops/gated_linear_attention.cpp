// Gated linear attention op: records the fused kernel's backward on the tape.
#include "framework/autograd/ops/gated_linear_attention.h"

#include "framework/autograd/function.h"
#include "framework/backend/fused/gated_linear_attention.h"

namespace rota {

Variable gated_linear_attention(const Variable& q, const Variable& k, const Variable& v,
                                const Variable& log_gate, int64_t chunk_size) {
  Tensor out = backend::gated_linear_attention_forward(q.data(), k.data(), v.data(),
                                                       log_gate.data(), chunk_size);
  if (!inspect_inputs({q, k, v, log_gate}).any) return Variable(std::move(out), false);
  return record_op("gated_linear_attention", out, {q, k, v, log_gate},
                   [qd = q.data(), kd = k.data(), vd = v.data(), gd = log_gate.data(),
                    chunk_size](const Tensor& g) {
                     auto grads =
                         backend::gated_linear_attention_backward(qd, kd, vd, gd, g, chunk_size);
                     return std::vector<Tensor>{grads.dq, grads.dk, grads.dv, grads.dlog_gate};
                   });
}

}  // namespace rota
