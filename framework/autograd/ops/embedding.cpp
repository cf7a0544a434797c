// Embedding op: forward gathers rows, backward scatter-adds the gradient rows.
#include "framework/autograd/ops/embedding.h"

#include "framework/autograd/function.h"
#include "framework/backend/primitives/embedding.h"

namespace rota {

Variable embedding(const Tensor& ids, const Variable& weight, std::optional<int64_t> padding_idx) {
  ROTA_CHECK(weight.defined() && weight.dim() == 2, "embedding: weight {} must be [V, D]",
             weight.defined() ? shape_str(weight.shape()) : std::string("(undefined)"));
  const int64_t vocab = weight.size(0);
  if (padding_idx) {
    const int64_t given = *padding_idx;
    if (*padding_idx < 0) *padding_idx += vocab;
    ROTA_CHECK(*padding_idx >= 0 && *padding_idx < vocab,
               "embedding: padding_idx {} is out of range for {} embeddings", given, vocab);
  }
  const OpRecord rec = inspect_inputs({weight});
  Tensor out = backend::embedding(ids, weight.data());
  if (!rec.any) return Variable(std::move(out), false);
  // ids: [...], g: [..., D] → dW: [V, D], dW[ids[p]] += g[p] (none to padding_idx).
  return record_op("embedding", out, {weight},
                   [ids, vocab, padding_idx](const Tensor& grad) -> std::vector<Tensor> {
                     return {backend::embedding_backward(ids, grad, vocab, padding_idx)};
                   });
}

}  // namespace rota
