// Masked-LM windows with per-(epoch, window) masking seeds.
#include "data/dataset/mlm_dataset.h"

#include <algorithm>

#include "framework/base/error.h"
#include "framework/base/seed_mix.h"

namespace rota::data {

MaskedLmDataset::MaskedLmDataset(TokenStream tokens, int64_t seq_len, WindowMode mode,
                                 MlmMasker masker, uint64_t seed, int64_t pad_id, int64_t cls_id)
    : TokenWindows("masked lm dataset", std::move(tokens), seq_len, pad_id),
      masker_(std::move(masker)),
      seed_(seed),
      cls_id_(cls_id) {
  const int64_t content_len = cls_id >= 0 ? seq_len - 1 : seq_len;  // stream tokens per window
  ROTA_CHECK(content_len > 0, "masked lm dataset: seq_len {} leaves no room for tokens", seq_len);
  cut(content_len, /*lookahead=*/0, mode);
}

LmBatch MaskedLmDataset::batch(std::span<const int64_t> indices, int64_t epoch) const {
  const int64_t offset = cls_id_ >= 0 ? 1 : 0;
  return batch_of(
      indices, epoch, offset,
      [&](int64_t w, const Window& window, int64_t T, int64_t* row, int64_t* row_targets,
          float* mask) {
        const int64_t length = window.length;
        if (offset) {
          row[0] = cls_id_;
          row_targets[0] = kIgnoreIndex;
        }
        copy_stream(window.start, length, row + offset);
        for (int64_t t = offset + length; t < T; ++t) {
          row[t] = pad_id();
          row_targets[t] = kIgnoreIndex;
        }
        Generator gen(mix_seed({seed_, static_cast<uint64_t>(epoch), static_cast<uint64_t>(w)}));
        const int64_t targets = masker_.apply(std::span(row + offset, length),
                                              std::span(row_targets + offset, length), gen);
        for (int64_t t = 0; t < T; ++t) mask[t] = t < offset + length ? 1.0f : 0.0f;
        return targets;
      });
}

}  // namespace rota::data
