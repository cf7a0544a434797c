// Document ids and cross-document targets of packed language-model batches.
#include "data/dataset/documents.h"

#include <algorithm>

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

std::vector<int64_t> document_positions_after(const Tensor& tokens_in, int64_t separator,
                                              std::vector<int64_t> before) {
  ROTA_CHECK(tokens_in.dim() == 2 && tokens_in.dtype() == DType::kI64,
             "document positions: tokens {} must be i64 [B, W]", shape_str(tokens_in.shape()));
  const Tensor tokens = tokens_in.contiguous();
  const int64_t rows = tokens.size(0), width = tokens.size(1);
  ROTA_CHECK(static_cast<int64_t>(before.size()) == rows,
             "document positions: {} positions for {} rows", before.size(), rows);
  const int64_t* in = tokens.data<int64_t>();
  for (int64_t r = 0; r < rows; ++r) {
    int64_t t = width - 1;
    while (t >= 0 && in[r * width + t] != separator) --t;
    before[r] = t < 0 ? before[r] + width : width - 1 - t;
  }
  return before;
}

int64_t document_position_at(const TokenSequence& stream, int64_t lane_begin, int64_t at,
                             int64_t separator) {
  ROTA_CHECK(0 <= lane_begin && lane_begin <= at && at <= stream.size(),
             "document position: token {} of a lane from {} outside a stream of {}", at, lane_begin,
             stream.size());
  constexpr int64_t kBlock = 4096;
  std::vector<int64_t> block(kBlock);
  for (int64_t end = at; end > lane_begin;) {
    const int64_t begin = std::max(lane_begin, end - kBlock);
    stream.copy_to(begin, end - begin, block.data());
    for (int64_t i = end - begin - 1; i >= 0; --i) {
      if (block[static_cast<size_t>(i)] == separator) return at - (begin + i + 1);
    }
    end = begin;
  }
  return at - lane_begin;
}

}  // namespace rota::data
