// Causal language-model windows over a token stream: inputs [B, T] and targets shifted by one.
#pragma once

#include <span>

#include "data/dataset/batch.h"

namespace rota::data {

/// How a token stream is cut into windows.
enum class WindowMode {
  /// Full windows only (every row has T real tokens); the tail that does not fill a window is
  /// not used in this epoch.
  kTrain,
  /// Non-overlapping windows covering the whole stream; the last one may be partial (padded,
  /// mask 0, target kIgnoreIndex), so every token is scored exactly once.
  kEval,
};

/// Window w holds inputs stream[wT, wT + len) and targets stream[wT + 1, wT + len + 1), with
/// len = T except for the last evaluation window. A stream of N tokens has (N - 1) / T
/// training windows and ceil((N - 1) / T) evaluation windows, which together predict all
/// N - 1 tokens after the first: perplexity = exp(sum of losses / target_count()).
class CausalLmDataset {
 public:
  CausalLmDataset(TokenStream tokens, int64_t seq_len, WindowMode mode, int64_t pad_id);

  /// Number of windows (examples).
  int64_t size() const { return windows_; }
  int64_t seq_len() const { return seq_len_; }
  /// Tokens in the stream (N).
  int64_t token_count() const { return static_cast<int64_t>(tokens_->size()); }
  /// Targets over all windows: N - 1 in evaluation mode, size() * T in training mode.
  int64_t target_count() const;
  /// The windows with these indices as one batch: tokens, targets, mask [indices.size(), T].
  LmBatch batch(std::span<const int64_t> indices) const;

 private:
  TokenStream tokens_;
  int64_t seq_len_;
  WindowMode mode_;
  int64_t pad_id_;
  int64_t windows_ = 0;
};

}  // namespace rota::data
