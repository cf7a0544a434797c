// Gated linear attention op: records the fused kernel's backward on the tape.
#include "framework/autograd/ops/gated_linear_attention.h"

#include "framework/autograd/function.h"
#include "framework/backend/fused/gated_linear_attention.h"

namespace rota {

Variable gated_linear_attention(const Variable& q, const Variable& k, const Variable& v,
                                const Variable& log_gate, int64_t chunk_size,
                                const Tensor& segment_ids) {
  Tensor out = backend::gated_linear_attention_forward(
      q.data(), k.data(), v.data(), log_gate.data(), chunk_size, Tensor(), nullptr, segment_ids);
  if (!inspect_inputs({q, k, v, log_gate}).any) return Variable(std::move(out), false);
  return record_op("gated_linear_attention", out, {q, k, v, log_gate},
                   [qd = q.data(), kd = k.data(), vd = v.data(), gd = log_gate.data(), chunk_size,
                    segment_ids](const Tensor& g) {
                     auto grads = backend::gated_linear_attention_backward(
                         qd, kd, vd, gd, g, chunk_size, Tensor(), Tensor(), segment_ids);
                     return std::vector<Tensor>{grads.dq, grads.dk, grads.dv, grads.dlog_gate};
                   });
}

CausalAttentionWithState gated_linear_attention_with_state(
    const Variable& q, const Variable& k, const Variable& v, const Variable& log_gate,
    const Variable& initial_state, int64_t chunk_size, const Tensor& segment_ids) {
  const Tensor initial = initial_state.defined() ? initial_state.data() : Tensor();
  Tensor final_state;
  Tensor out =
      backend::gated_linear_attention_forward(q.data(), k.data(), v.data(), log_gate.data(),
                                              chunk_size, initial, &final_state, segment_ids);
  std::vector<Variable> inputs{q, k, v, log_gate};
  if (initial_state.defined()) inputs.push_back(initial_state);
  std::vector<Variable> outs = record_multi_output_op(
      "gated_linear_attention_with_state", {std::move(out), std::move(final_state)}, inputs,
      [qd = q.data(), kd = k.data(), vd = v.data(), gd = log_gate.data(), initial, chunk_size,
       segment_ids](const std::vector<Tensor>& g) {
        // g[0]: dL/do [..., N, D]; g[1]: dL/dS_N [..., F, D] (zeros when S_N was not used).
        auto grads = backend::gated_linear_attention_backward(qd, kd, vd, gd, g[0], chunk_size,
                                                              initial, g[1], segment_ids);
        std::vector<Tensor> result{grads.dq, grads.dk, grads.dv, grads.dlog_gate};
        if (initial.defined()) result.push_back(grads.d_initial_state);
        return result;
      });
  return {outs[0], outs[1]};
}

}  // namespace rota
