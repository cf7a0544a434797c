// Delta-rule attention op: records the fused chunked kernel's backward on the tape.
#include "framework/autograd/ops/delta_rule_attention.h"

#include "framework/autograd/function.h"
#include "framework/backend/fused/delta_rule_attention.h"

namespace rota {

Variable delta_rule_attention(const Variable& q, const Variable& k, const Variable& v,
                              const Variable& beta, const Variable& log_gate, int64_t chunk_size,
                              const Tensor& segment_ids) {
  const Tensor gate = log_gate.defined() ? log_gate.data() : Tensor();
  Tensor out = backend::delta_rule_attention_forward(
      q.data(), k.data(), v.data(), beta.data(), gate, chunk_size, Tensor(), nullptr, segment_ids);
  if (!inspect_inputs({q, k, v, beta, log_gate}).any) return Variable(std::move(out), false);
  return record_op(
      "delta_rule_attention", out, {q, k, v, beta, log_gate},
      [qd = q.data(), kd = k.data(), vd = v.data(), bd = beta.data(), gate, chunk_size,
       segment_ids](const Tensor& g) {
        auto grads = backend::delta_rule_attention_backward(qd, kd, vd, bd, gate, g, chunk_size,
                                                            Tensor(), Tensor(), segment_ids);
        return std::vector<Tensor>{grads.dq, grads.dk, grads.dv, grads.dbeta, grads.dlog_gate};
      });
}

CausalAttentionWithState delta_rule_attention_with_state(const Variable& q, const Variable& k,
                                                         const Variable& v, const Variable& beta,
                                                         const Variable& log_gate,
                                                         const Variable& initial_state,
                                                         int64_t chunk_size,
                                                         const Tensor& segment_ids) {
  const Tensor gate = log_gate.defined() ? log_gate.data() : Tensor();
  const Tensor initial = initial_state.defined() ? initial_state.data() : Tensor();
  Tensor final_state;
  Tensor out =
      backend::delta_rule_attention_forward(q.data(), k.data(), v.data(), beta.data(), gate,
                                            chunk_size, initial, &final_state, segment_ids);
  std::vector<Variable> outs = record_multi_output_op(
      "delta_rule_attention_with_state", {std::move(out), std::move(final_state)},
      {q, k, v, beta, log_gate, initial_state},
      [qd = q.data(), kd = k.data(), vd = v.data(), bd = beta.data(), gate, initial, chunk_size,
       segment_ids](const std::vector<Tensor>& g) {
        // g[0]: dL/do [..., N, D]; g[1]: dL/dS_N [..., F, D] (zeros when S_N was not used).
        auto grads = backend::delta_rule_attention_backward(qd, kd, vd, bd, gate, g[0], chunk_size,
                                                            initial, g[1], segment_ids);
        return std::vector<Tensor>{grads.dq,    grads.dk,        grads.dv,
                                   grads.dbeta, grads.dlog_gate, grads.d_initial_state};
      });
  return {outs[0], outs[1]};
}

}  // namespace rota
