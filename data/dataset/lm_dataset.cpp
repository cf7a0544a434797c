// Causal LM windows.
#include "data/dataset/lm_dataset.h"

#include <algorithm>

#include "framework/base/error.h"
#include "framework/base/seed_mix.h"
#include "framework/tensor/random.h"

namespace rota::data {

TokenWindows::TokenWindows(const char* what, TokenStream tokens, int64_t seq_len, int64_t pad_id)
    : what_(what), tokens_(std::move(tokens)), seq_len_(seq_len), pad_id_(pad_id) {
  ROTA_CHECK(tokens_ != nullptr, "{}: no token stream", what_);
}

void TokenWindows::cut(int64_t content_len, int64_t lookahead, WindowMode mode, int64_t stride) {
  ROTA_CHECK(stride >= 0 && stride <= content_len,
             "{}: the stride must be in [1, {}] (0: the window length), got {}", what_, content_len,
             stride);
  ROTA_CHECK(stride == 0 || stride == content_len || mode == WindowMode::kEval,
             "{}: sliding windows (a stride) apply to evaluation windows only", what_);
  content_len_ = content_len;
  stride_ = stride == 0 ? content_len : stride;
  mode_ = mode;
  usable_ = std::max<int64_t>(token_count() - lookahead, 0);
  if (mode == WindowMode::kTrain) {
    windows_ = usable_ / content_len;
  } else if (usable_ <= content_len) {
    windows_ = usable_ > 0 ? 1 : 0;
  } else {  // the last window reaches the end: (windows − 1) · stride + content_len >= usable
    windows_ = 1 + (usable_ - content_len + stride_ - 1) / stride_;
  }
}

void TokenWindows::set_sampling(const WindowSampling& sampling) {
  ROTA_CHECK(!sampling.random_offsets || mode_ == WindowMode::kTrain,
             "{}: random window offsets apply to training windows only", what_);
  sampling_ = sampling;
}

TokenWindows::Window TokenWindows::window_at(int64_t w, int64_t epoch) const {
  ROTA_CHECK(w >= 0 && w < windows_, "{}: window {} outside [0, {})", what_, w, windows_);
  if (sampling_.random_offsets) {
    // A full window anywhere in the usable stream: start in [0, usable − C] (training windows
    // exist only when usable >= C).
    Generator gen(
        mix_seed({sampling_.seed, static_cast<uint64_t>(epoch), static_cast<uint64_t>(w)}));
    const int64_t last_start = usable_ - content_len_;
    const auto start = static_cast<int64_t>(gen.next_below(static_cast<uint64_t>(last_start) + 1));
    return {start, content_len_, 0};
  }
  const int64_t start = w * stride_;
  // Window w > 0 scores the positions past the previous window's end, (w − 1)·stride + C.
  const int64_t scored_from = w == 0 ? 0 : content_len_ - stride_;
  return {start, std::min(content_len_, usable_ - start), scored_from};
}

CausalLmDataset::CausalLmDataset(TokenStream tokens, int64_t seq_len, WindowMode mode,
                                 int64_t pad_id, int64_t stride)
    : TokenWindows("causal lm dataset", std::move(tokens), seq_len, pad_id), mode_(mode) {
  ROTA_CHECK(seq_len > 0, "causal lm dataset: seq_len must be positive, got {}", seq_len);
  cut(seq_len, /*lookahead=*/1, mode, stride);
}

int64_t CausalLmDataset::target_count() const {
  return mode_ == WindowMode::kTrain ? size() * seq_len() : std::max<int64_t>(token_count() - 1, 0);
}

LmBatch CausalLmDataset::batch(std::span<const int64_t> indices, int64_t epoch) const {
  return batch_of(indices, epoch, /*prefix=*/0,
                  [&](int64_t, const Window& window, int64_t T, int64_t* tokens, int64_t* targets,
                      float* mask) {
                    copy_stream(window.start, window.length, tokens);
                    copy_stream(window.start + 1, window.length, targets);
                    for (int64_t t = 0; t < T; ++t) {
                      const bool real = t < window.length;
                      if (!real) tokens[t] = pad_id();
                      // Padding, and a sliding window's context positions, are not scored.
                      if (!real || t < window.scored_from) targets[t] = kIgnoreIndex;
                      mask[t] = real ? 1.0f : 0.0f;
                    }
                    return window.length - window.scored_from;
                  });
}

}  // namespace rota::data
