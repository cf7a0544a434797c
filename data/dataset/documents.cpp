// Document ids and cross-document targets of packed language-model batches.
#include "data/dataset/documents.h"

#include "framework/base/error.h"

namespace rota::data {

Tensor document_ids(const Tensor& tokens_in, int64_t separator) {
  ROTA_CHECK(tokens_in.dim() == 2 && tokens_in.dtype() == DType::kI64,
             "document ids: tokens {} must be i64 [B, W]", shape_str(tokens_in.shape()));
  const Tensor tokens = tokens_in.contiguous();
  const int64_t rows = tokens.size(0), width = tokens.size(1);
  Tensor ids = Tensor::empty({rows, width}, DType::kI64);
  const int64_t* in = tokens.data<int64_t>();
  int64_t* out = ids.data<int64_t>();
  for (int64_t r = 0; r < rows; ++r) {
    int64_t doc = 0;
    for (int64_t t = 0; t < width; ++t) {
      out[r * width + t] = doc;
      if (in[r * width + t] == separator) ++doc;  // the next position starts a new document
    }
  }
  return ids;
}

void mark_causal_documents(LmBatch& batch, int64_t separator) {
  batch.segment_ids = document_ids(batch.tokens, separator);
  batch.targets = batch.targets.contiguous();
  const Tensor tokens = batch.tokens.contiguous();
  const int64_t* in = tokens.data<int64_t>();
  int64_t* targets = batch.targets.data<int64_t>();
  for (int64_t i = 0; i < tokens.numel(); ++i) {
    if (in[i] != separator || targets[i] == kIgnoreIndex) continue;
    targets[i] = kIgnoreIndex;
    --batch.target_count;
  }
}

void mark_masked_documents(LmBatch& batch, int64_t separator) {
  Tensor originals = batch.tokens.contiguous().clone();
  const Tensor targets = batch.targets.contiguous();
  int64_t* original = originals.data<int64_t>();
  const int64_t* target = targets.data<int64_t>();
  for (int64_t i = 0; i < originals.numel(); ++i) {
    if (target[i] != kIgnoreIndex) original[i] = target[i];
  }
  batch.segment_ids = document_ids(originals, separator);
}

}  // namespace rota::data
