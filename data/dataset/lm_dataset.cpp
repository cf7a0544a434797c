// Causal LM windows.
#include "data/dataset/lm_dataset.h"

#include <algorithm>

#include "framework/base/error.h"

namespace rota::data {

CausalLmDataset::CausalLmDataset(TokenStream tokens, int64_t seq_len, WindowMode mode,
                                 int64_t pad_id)
    : tokens_(std::move(tokens)), seq_len_(seq_len), mode_(mode), pad_id_(pad_id) {
  ROTA_CHECK(tokens_ != nullptr, "causal lm dataset: no token stream");
  ROTA_CHECK(seq_len > 0, "causal lm dataset: seq_len must be positive, got {}", seq_len);
  const int64_t predicted = std::max<int64_t>(token_count() - 1, 0);
  windows_ = mode == WindowMode::kTrain ? predicted / seq_len : (predicted + seq_len - 1) / seq_len;
}

int64_t CausalLmDataset::target_count() const {
  return mode_ == WindowMode::kTrain ? windows_ * seq_len_
                                     : std::max<int64_t>(token_count() - 1, 0);
}

LmBatch CausalLmDataset::batch(std::span<const int64_t> indices) const {
  const int64_t B = static_cast<int64_t>(indices.size());
  const int64_t T = seq_len_;
  const int64_t predicted = token_count() - 1;
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
    ROTA_CHECK(w >= 0 && w < windows_, "causal lm dataset: window {} outside [0, {})", w, windows_);
    const int64_t start = w * T;
    const int64_t length = std::min(T, predicted - start);
    for (int64_t t = 0; t < T; ++t) {
      const bool real = t < length;
      tokens[b * T + t] = real ? stream[start + t] : pad_id_;
      targets[b * T + t] = real ? stream[start + t + 1] : kIgnoreIndex;
      mask[b * T + t] = real ? 1.0f : 0.0f;
    }
    batch.target_count += length;
  }
  return batch;
}

}  // namespace rota::data
