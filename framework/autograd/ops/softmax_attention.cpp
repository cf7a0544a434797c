// Fused softmax attention op: forward and backward through the memory-efficient kernel pair.
#include "framework/autograd/ops/softmax_attention.h"

#include "framework/autograd/function.h"

namespace rota {

namespace {

// The dropout seed of one call: a draw from gen when dropout_p > 0 (gen required), else 0 and
// gen untouched.
uint64_t dropout_seed(const char* op, double dropout_p, Generator* gen) {
  if (!(dropout_p > 0.0)) return 0;
  ROTA_CHECK(gen != nullptr, "{}: dropout_p = {} needs a generator", op, dropout_p);
  return gen->next_u64();
}

// The backward kernel of one bias form: backend::softmax_attention_backward (b = the bias) or
// backend::softmax_attention_backward_relative (b = the relative table).
using AttentionBackward = backend::SoftmaxAttentionGrads (*)(
    const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& b, double scale,
    const backend::SoftmaxAttentionMasks& masks, const Tensor& out, const Tensor& logsumexp,
    const Tensor& grad_out, double dropout_p, uint64_t dropout_seed,
    const backend::SoftmaxAttentionGradsNeeded& needed);

// Both ops: the forward kernel on q, k, v with `bias` (b itself, or the Toeplitz view of the
// table b), recorded with inputs {q, k, v, b} and `backward` for their gradients.
Variable fused_attention(const char* op, const Variable& q, const Variable& k, const Variable& v,
                         const Variable& b, const Tensor& bias, double scale,
                         const backend::SoftmaxAttentionMasks& masks, double dropout_p,
                         uint64_t seed, AttentionBackward backward) {
  backend::SoftmaxAttentionResult result = backend::softmax_attention_forward(
      q.data(), k.data(), v.data(), bias, scale, masks, dropout_p, seed);
  const OpRecord record = inspect_inputs({q, k, v, b});
  if (!record.any) return Variable(std::move(result.out), false);
  // Saved: the inputs, out and the per-row logsumexp — O(N·D) per slice, never the N×N
  // probabilities (the backward recomputes them tile by tile).
  const backend::SoftmaxAttentionGradsNeeded needed{record.needs[0], record.needs[1],
                                                    record.needs[2], record.needs[3]};
  return record_op(
      op, result.out, {q, k, v, b},
      [qd = q.data(), kd = k.data(), vd = v.data(), bd = b.defined() ? b.data() : Tensor(), scale,
       masks, dropout_p, seed, out = result.out, lse = result.logsumexp, needed,
       backward](const Tensor& grad_out) {
        backend::SoftmaxAttentionGrads g =
            backward(qd, kd, vd, bd, scale, masks, out, lse, grad_out, dropout_p, seed, needed);
        return std::vector<Tensor>{g.dq, g.dk, g.dv, g.dbias};
      });
}

}  // namespace

Variable softmax_attention(const Variable& q, const Variable& k, const Variable& v,
                           const Variable& bias, double scale,
                           const backend::SoftmaxAttentionMasks& masks, double dropout_p,
                           Generator* gen) {
  const char* op = "softmax_attention";
  ROTA_CHECK(q.defined() && k.defined() && v.defined(), "{}: q, k and v must be defined", op);
  const uint64_t seed = dropout_seed(op, dropout_p, gen);
  const Tensor bias_data = bias.defined() ? bias.data() : Tensor();
  return fused_attention(op, q, k, v, bias, bias_data, scale, masks, dropout_p, seed,
                         &backend::softmax_attention_backward);
}

Variable softmax_attention_relative(const Variable& q, const Variable& k, const Variable& v,
                                    const Variable& table, double scale,
                                    const backend::SoftmaxAttentionMasks& masks, double dropout_p,
                                    Generator* gen) {
  const char* op = "softmax_attention_relative";
  ROTA_CHECK(q.defined() && k.defined() && v.defined() && table.defined(),
             "{}: q, k, v and the table must be defined", op);
  ROTA_CHECK(q.dim() == 4 && k.dim() == 4, "{}: q {} and k {} must be 4-D", op,
             shape_str(q.shape()), shape_str(k.shape()));
  const uint64_t seed = dropout_seed(op, dropout_p, gen);
  const Tensor bias = backend::relative_bias_view(table.data(), q.size(2), k.size(2));
  return fused_attention(op, q, k, v, table, bias, scale, masks, dropout_p, seed,
                         &backend::softmax_attention_backward_relative);
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
