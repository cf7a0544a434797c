// Fused softmax attention op: forward and backward through the memory-efficient kernel pair.
#include "framework/autograd/ops/softmax_attention.h"

#include "framework/autograd/function.h"

namespace rota {

Variable softmax_attention(const Variable& q, const Variable& k, const Variable& v,
                           const Variable& bias, double scale,
                           const backend::SoftmaxAttentionMasks& masks, double dropout_p,
                           Generator* gen) {
  ROTA_CHECK(q.defined() && k.defined() && v.defined(),
             "softmax_attention: q, k and v must be defined");
  uint64_t seed = 0;
  if (dropout_p > 0.0) {
    ROTA_CHECK(gen != nullptr, "softmax_attention: dropout_p = {} needs a generator", dropout_p);
    seed = gen->next_u64();
  }
  const Tensor bias_data = bias.defined() ? bias.data() : Tensor();
  backend::SoftmaxAttentionResult result = backend::softmax_attention_forward(
      q.data(), k.data(), v.data(), bias_data, scale, masks, dropout_p, seed);
  const OpRecord record = inspect_inputs({q, k, v, bias});
  if (!record.any) return Variable(std::move(result.out), false);
  // Saved: the inputs, out and the per-row logsumexp — O(N·D) per slice, never the N×N
  // probabilities (the backward recomputes them tile by tile).
  const backend::SoftmaxAttentionGradsNeeded needed{record.needs[0], record.needs[1],
                                                    record.needs[2], record.needs[3]};
  return record_op(
      "softmax_attention", result.out, {q, k, v, bias},
      [qd = q.data(), kd = k.data(), vd = v.data(), bias_data, scale, masks, dropout_p, seed,
       out = result.out, lse = result.logsumexp, needed](const Tensor& grad_out) {
        backend::SoftmaxAttentionGrads g = backend::softmax_attention_backward(
            qd, kd, vd, bias_data, scale, masks, out, lse, grad_out, dropout_p, seed, needed);
        return std::vector<Tensor>{g.dq, g.dk, g.dv, g.dbias};
      });
}

Variable softmax_attention_relative(const Variable& q, const Variable& k, const Variable& v,
                                    const Variable& table, double scale,
                                    const backend::SoftmaxAttentionMasks& masks, double dropout_p,
                                    Generator* gen) {
  ROTA_CHECK(q.defined() && k.defined() && v.defined() && table.defined(),
             "softmax_attention_relative: q, k, v and the table must be defined");
  ROTA_CHECK(q.dim() == 4 && k.dim() == 4, "softmax_attention_relative: q {} and k {} must be 4-D",
             shape_str(q.shape()), shape_str(k.shape()));
  uint64_t seed = 0;
  if (dropout_p > 0.0) {
    ROTA_CHECK(gen != nullptr, "softmax_attention_relative: dropout_p = {} needs a generator",
               dropout_p);
    seed = gen->next_u64();
  }
  const Tensor table_data = table.data();
  const Tensor bias = backend::relative_bias_view(table_data, q.size(2), k.size(2));
  backend::SoftmaxAttentionResult result = backend::softmax_attention_forward(
      q.data(), k.data(), v.data(), bias, scale, masks, dropout_p, seed);
  const OpRecord record = inspect_inputs({q, k, v, table});
  if (!record.any) return Variable(std::move(result.out), false);
  const backend::SoftmaxAttentionGradsNeeded needed{record.needs[0], record.needs[1],
                                                    record.needs[2], record.needs[3]};
  return record_op(
      "softmax_attention_relative", result.out, {q, k, v, table},
      [qd = q.data(), kd = k.data(), vd = v.data(), table_data, scale, masks, dropout_p, seed,
       out = result.out, lse = result.logsumexp, needed](const Tensor& grad_out) {
        backend::SoftmaxAttentionGrads g = backend::softmax_attention_backward_relative(
            qd, kd, vd, table_data, scale, masks, out, lse, grad_out, dropout_p, seed, needed);
        return std::vector<Tensor>{g.dq, g.dk, g.dv, g.dbias};
      });
}

Variable relative_position_bias(const Variable& table, int64_t nq, int64_t nk) {
  ROTA_CHECK(table.defined(), "relative_position_bias: table is undefined");
  Tensor view = backend::relative_bias_view(table.data(), nq, nk);
  if (!inspect_inputs({table}).any) return Variable(std::move(view), false);
  return record_op("relative_position_bias", view, {table}, [nq, nk](const Tensor& grad) {
    return std::vector<Tensor>{backend::relative_bias_view_backward(grad, nq, nk)};
  });
}

}  // namespace rota
