// Masked-LM windows with per-(epoch, window) masking seeds.
#include "data/dataset/mlm_dataset.h"

#include <algorithm>

#include "framework/base/seed_mix.h"
#include "framework/base/error.h"

namespace rota::data {

MaskedLmDataset::MaskedLmDataset(TokenStream tokens, int64_t seq_len, WindowMode mode,
                                 MlmMasker masker, uint64_t seed, int64_t pad_id, int64_t cls_id)
    : tokens_(std::move(tokens)),
      seq_len_(seq_len),
      content_len_(cls_id >= 0 ? seq_len - 1 : seq_len),
      masker_(std::move(masker)),
      seed_(seed),
      pad_id_(pad_id),
      cls_id_(cls_id) {
  ROTA_CHECK(tokens_ != nullptr, "masked lm dataset: no token stream");
  ROTA_CHECK(content_len_ > 0, "masked lm dataset: seq_len {} leaves no room for tokens", seq_len);
  const int64_t n = token_count();
  windows_ = mode == WindowMode::kTrain ? n / content_len_ : (n + content_len_ - 1) / content_len_;
}

LmBatch MaskedLmDataset::batch(std::span<const int64_t> indices, int64_t epoch) const {
  const int64_t B = static_cast<int64_t>(indices.size());
  const int64_t T = seq_len_;
  const int64_t offset = cls_id_ >= 0 ? 1 : 0;
  LmBatch batch;
  batch.tokens = Tensor::empty({B, T}, DType::kI64);
  batch.targets = Tensor::empty({B, T}, DType::kI64);
  batch.mask = Tensor::empty({B, T}, DType::kF32);
  int64_t* tokens = batch.tokens.data<int64_t>();
  int64_t* targets = batch.targets.data<int64_t>();
  float* mask = batch.mask.data<float>();
  const int64_t* stream = tokens_->data();
  for (int64_t b = 0; b < B; ++b) {
    const int64_t w = indices[b];
    ROTA_CHECK(w >= 0 && w < windows_, "masked lm dataset: window {} outside [0, {})", w, windows_);
    const int64_t start = w * content_len_;
    const int64_t length = std::min(content_len_, token_count() - start);
    int64_t* row = tokens + b * T;
    int64_t* row_targets = targets + b * T;
    if (offset) {
      row[0] = cls_id_;
      row_targets[0] = kIgnoreIndex;
    }
    std::copy(stream + start, stream + start + length, row + offset);
    for (int64_t t = offset + length; t < T; ++t) {
      row[t] = pad_id_;
      row_targets[t] = kIgnoreIndex;
    }
    Generator gen(mix_seed({seed_, static_cast<uint64_t>(epoch), static_cast<uint64_t>(w)}));
    batch.target_count += masker_.apply(std::span(row + offset, length),
                                        std::span(row_targets + offset, length), gen);
    for (int64_t t = 0; t < T; ++t) mask[b * T + t] = t < offset + length ? 1.0f : 0.0f;
  }
  return batch;
}

}  // namespace rota::data
