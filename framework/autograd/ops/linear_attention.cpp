// Linear attention ops: record the fused kernels' backward on the tape.
#include "framework/autograd/ops/linear_attention.h"

#include "framework/autograd/function.h"
#include "framework/backend/fused/linear_attention.h"

namespace rota {

Variable causal_linear_attention(const Variable& q, const Variable& k, const Variable& v,
                                 int64_t chunk_size, const Tensor& decay,
                                 const Tensor& segment_ids) {
  Tensor out = backend::causal_linear_attention_forward(q.data(), k.data(), v.data(), chunk_size,
                                                        decay, Tensor(), nullptr, segment_ids);
  if (!inspect_inputs({q, k, v}).any) return Variable(std::move(out), false);
  return record_op("causal_linear_attention", out, {q, k, v},
                   [qd = q.data(), kd = k.data(), vd = v.data(), chunk_size, decay,
                    segment_ids](const Tensor& g) {
                     auto grads = backend::causal_linear_attention_backward(
                         qd, kd, vd, g, chunk_size, decay, Tensor(), Tensor(), segment_ids);
                     return std::vector<Tensor>{grads.dq, grads.dk, grads.dv};
                   });
}

CausalAttentionWithState causal_linear_attention_with_state(const Variable& q, const Variable& k,
                                                            const Variable& v,
                                                            const Variable& initial_state,
                                                            int64_t chunk_size, const Tensor& decay,
                                                            const Tensor& segment_ids) {
  const Tensor initial = initial_state.defined() ? initial_state.data() : Tensor();
  Tensor final_state;
  Tensor out = backend::causal_linear_attention_forward(q.data(), k.data(), v.data(), chunk_size,
                                                        decay, initial, &final_state, segment_ids);
  std::vector<Variable> inputs{q, k, v};
  if (initial_state.defined()) inputs.push_back(initial_state);
  std::vector<Variable> outs = record_multi_output_op(
      "causal_linear_attention_with_state", {std::move(out), std::move(final_state)}, inputs,
      [qd = q.data(), kd = k.data(), vd = v.data(), initial, chunk_size, decay,
       segment_ids](const std::vector<Tensor>& g) {
        // g[0]: dL/do [..., N, D]; g[1]: dL/dS_N [..., F, D] (zeros when S_N was not used).
        auto grads = backend::causal_linear_attention_backward(qd, kd, vd, g[0], chunk_size, decay,
                                                               initial, g[1], segment_ids);
        std::vector<Tensor> result{grads.dq, grads.dk, grads.dv};
        if (initial.defined()) result.push_back(grads.d_initial_state);
        return result;
      });
  return {outs[0], outs[1]};
}

Variable bidirectional_linear_attention(const Variable& q, const Variable& k, const Variable& v,
                                        const Tensor& key_mask, const Tensor& segment_ids) {
  Tensor out = backend::bidirectional_linear_attention_forward(q.data(), k.data(), v.data(),
                                                               key_mask, segment_ids);
  if (!inspect_inputs({q, k, v}).any) return Variable(std::move(out), false);
  return record_op(
      "bidirectional_linear_attention", out, {q, k, v},
      [qd = q.data(), kd = k.data(), vd = v.data(), key_mask, segment_ids](const Tensor& g) {
        auto grads =
            backend::bidirectional_linear_attention_backward(qd, kd, vd, g, key_mask, segment_ids);
        return std::vector<Tensor>{grads.dq, grads.dk, grads.dv};
      });
}

}  // namespace rota
