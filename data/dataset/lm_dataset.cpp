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
  ROTA_CHECK(sampling.lanes >= 0, "{}: lanes must be >= 0, got {}", what_, sampling.lanes);
  ROTA_CHECK(sampling.lanes == 0 || (mode_ == WindowMode::kTrain && !sampling.random_offsets),
             "{}: lanes apply to training windows without random offsets", what_);
  sampling_ = sampling;
  if (sampling.lanes > 0) {
    // Room for an epoch origin up to C − 1 in front of the lanes.
    lane_length_ = std::max<int64_t>(usable_ - (content_len_ - 1), 0) / sampling.lanes;
    windows_ = sampling.lanes * (lane_length_ / content_len_);
  } else if (mode_ == WindowMode::kTrain) {
    windows_ = usable_ / content_len_;
  }
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
  if (sampling_.lanes > 0) {
    const int64_t origin =
        epoch == 0 ? 0
                   : static_cast<int64_t>(
                         Generator(mix_seed({sampling_.seed, static_cast<uint64_t>(epoch)}))
                             .next_below(static_cast<uint64_t>(content_len_)));
    const int64_t lane = w % sampling_.lanes, step = w / sampling_.lanes;
    return {origin + lane * lane_length_ + step * content_len_, content_len_, 0};
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

LaneWindows::LaneWindows(TokenStream tokens, int64_t seq_len, int64_t lanes, int64_t pad_id)
    : tokens_(std::move(tokens)), seq_len_(seq_len), pad_id_(pad_id) {
  ROTA_CHECK(tokens_ != nullptr, "lane windows: no token stream");
  ROTA_CHECK(seq_len > 0, "lane windows: seq_len must be positive, got {}", seq_len);
  ROTA_CHECK(lanes > 0, "lane windows: lanes must be positive, got {}", lanes);
  usable_ = std::max<int64_t>(tokens_->size() - 1, 0);
  if (usable_ == 0) return;
  lane_length_ = (usable_ + lanes - 1) / lanes;
  lanes_ = (usable_ + lane_length_ - 1) / lane_length_;  // lanes that hold tokens
  batches_ = (lane_length_ + seq_len - 1) / seq_len;
}

LmBatch LaneWindows::batch(int64_t g) const {
  ROTA_CHECK(g >= 0 && g < batches_, "lane windows: batch {} outside [0, {})", g, batches_);
  // Lane k's window g: inputs [k·L + g·T, min(k·L + (g + 1)·T, (k + 1)·L, U)).
  std::vector<int64_t> starts(lanes_), lengths(lanes_);
  int64_t width = 0;
  for (int64_t k = 0; k < lanes_; ++k) {
    const int64_t lane_end = std::min((k + 1) * lane_length_, usable_);
    starts[k] = k * lane_length_ + g * seq_len_;
    lengths[k] = std::clamp<int64_t>(lane_end - starts[k], 0, seq_len_);
    width = std::max(width, lengths[k]);
  }
  LmBatch batch;
  batch.tokens = Tensor::empty({lanes_, width}, DType::kI64);
  batch.targets = Tensor::empty({lanes_, width}, DType::kI64);
  batch.mask = Tensor::empty({lanes_, width}, DType::kF32);
  for (int64_t k = 0; k < lanes_; ++k) {
    int64_t* tokens = batch.tokens.data<int64_t>() + k * width;
    int64_t* targets = batch.targets.data<int64_t>() + k * width;
    float* mask = batch.mask.data<float>() + k * width;
    const int64_t length = lengths[k];
    if (length > 0) {
      tokens_->copy_to(starts[k], length, tokens);
      tokens_->copy_to(starts[k] + 1, length, targets);
    }
    for (int64_t t = length; t < width; ++t) {
      tokens[t] = pad_id_;
      targets[t] = kIgnoreIndex;
    }
    for (int64_t t = 0; t < width; ++t) mask[t] = t < length ? 1.0f : 0.0f;
    batch.target_count += length;
  }
  return batch;
}

}  // namespace rota::data
