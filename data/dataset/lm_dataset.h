// Causal language-model windows over a token stream: inputs [B, T] and targets shifted by one.
#pragma once

#include <algorithm>

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

/// Where training windows start (kTrain only; evaluation windows are always aligned).
struct WindowSampling {
  /// false: window w starts at w·C (the stream cut into consecutive windows, shuffled by the
  /// loader each epoch). true: every (epoch, w) draws a fresh start uniformly from
  /// [0, N − lookahead − C] with Generator(mix_seed(seed, epoch, w)) — windows at random
  /// offsets, as many per epoch as aligned ones, deterministic from the seed, so a resumed loader
  /// continues with the same windows.
  bool random_offsets = false;
  uint64_t seed = 0;
  /// > 0: contiguous lanes for stateful training (not with random_offsets). The usable stream
  /// U = N − lookahead is read as `lanes` contiguous lanes of L = (U − (C − 1)) / lanes tokens,
  /// each cut into n = L / C consecutive windows; window w is window g = w / lanes of lane
  /// k = w % lanes and starts at o_e + k·L + g·C, where o_e is 0 in epoch 0 and drawn from
  /// [0, C) with Generator(mix_seed(seed, epoch)) after (so window boundaries move between
  /// epochs). Read in index order, batch g of `lanes` windows holds window g of every lane:
  /// lane k's window g + 1 continues its window g exactly where it ended.
  int64_t lanes = 0;
};

/// What both LM datasets are built on: a token stream cut into windows of C stream tokens, one
/// per row of seq_len positions. Window w covers stream[wC, wC + len) with len = C, except for a
/// partial last evaluation window (its row is padded with pad_id).
class TokenWindows {
 public:
  /// Number of windows (examples).
  int64_t size() const { return windows_; }
  int64_t seq_len() const { return seq_len_; }
  /// Tokens in the stream (N).
  int64_t token_count() const { return tokens_->size(); }
  /// Training windows at random offsets (see WindowSampling); only in kTrain mode.
  void set_sampling(const WindowSampling& sampling);
  const WindowSampling& sampling() const { return sampling_; }
  /// The first stream token of window w in `epoch`.
  int64_t window_start(int64_t w, int64_t epoch) const { return window_at(w, epoch).start; }
  /// With lanes (WindowSampling::lanes): the window's index within its lane, w / lanes (its
  /// first position in the lane is that times seq_len); 0 without lanes.
  int64_t lane_step(int64_t w) const { return sampling_.lanes > 0 ? w / sampling_.lanes : 0; }

 protected:
  /// `what` names the dataset in errors; the stream must be set (checked here, first).
  TokenWindows(const char* what, TokenStream tokens, int64_t seq_len, int64_t pad_id);

  /// Cuts the first N - lookahead tokens (the last `lookahead` only serve as targets) into
  /// windows of content_len > 0 tokens: full windows only (kTrain), or all with a partial last
  /// one (kEval). kEval with 0 < stride < content_len: sliding windows starting every `stride`
  /// tokens, each scoring only the tokens the previous window did not (see Window).
  void cut(int64_t content_len, int64_t lookahead, WindowMode mode, int64_t stride = 0);

  struct Window {
    int64_t start = 0;        // first stream token
    int64_t length = 0;       // stream tokens in the window
    int64_t scored_from = 0;  // first position of the window whose prediction is scored
  };
  /// The batch of the windows w = indices[b]: tokens, targets [B, W] i64 and mask [B, W] f32,
  /// row b filled by fill_row(w, window, W, tokens, targets, mask) (the row's W elements of
  /// each), which returns the row's target count. W is the longest row, prefix + window length
  /// (prefix: tokens a row holds before its window, e.g. [CLS]): seq_len for training windows,
  /// less when every window of the batch is a short last evaluation window, so a batch never
  /// costs more than its tokens (evaluating a short split at a huge --context stays small).
  /// Each w must be in [0, size()); `epoch` places random-offset windows (set_sampling).
  template <typename FillRow>
  LmBatch batch_of(std::span<const int64_t> indices, int64_t epoch, int64_t prefix,
                   FillRow&& fill_row) const {
    const int64_t B = static_cast<int64_t>(indices.size());
    std::vector<Window> windows(indices.size());
    int64_t W = 0;
    for (int64_t b = 0; b < B; ++b) {
      windows[b] = window_at(indices[b], epoch);
      W = std::max(W, prefix + windows[b].length);
    }
    LmBatch batch;
    batch.tokens = Tensor::empty({B, W}, DType::kI64);
    batch.targets = Tensor::empty({B, W}, DType::kI64);
    batch.mask = Tensor::empty({B, W}, DType::kF32);
    int64_t* tokens = batch.tokens.data<int64_t>();
    int64_t* targets = batch.targets.data<int64_t>();
    float* mask = batch.mask.data<float>();
    for (int64_t b = 0; b < B; ++b) {
      batch.target_count +=
          fill_row(indices[b], windows[b], W, tokens + b * W, targets + b * W, mask + b * W);
    }
    return batch;
  }

  /// Copies stream ids [start, start + count) into out.
  void copy_stream(int64_t start, int64_t count, int64_t* out) const {
    tokens_->copy_to(start, count, out);
  }
  int64_t pad_id() const { return pad_id_; }

 private:
  /// Window w of `epoch`, w in [0, size()).
  Window window_at(int64_t w, int64_t epoch) const;

  const char* what_;
  TokenStream tokens_;
  int64_t seq_len_;
  int64_t pad_id_;
  int64_t content_len_ = 0;
  int64_t usable_ = 0;  // N - lookahead: the tokens windows cover
  int64_t windows_ = 0;
  int64_t stride_ = 0;       // the start of window w is w · stride_
  int64_t lane_length_ = 0;  // L, with lanes
  WindowMode mode_ = WindowMode::kTrain;
  WindowSampling sampling_;
};

/// Window w holds inputs stream[wT, wT + len) and targets stream[wT + 1, wT + len + 1), with
/// len = T except for the last evaluation window. A stream of N tokens has (N - 1) / T
/// training windows and ceil((N - 1) / T) evaluation windows, which together predict all
/// N - 1 tokens after the first: perplexity = exp(sum of losses / target_count()).
class CausalLmDataset : public TokenWindows {
 public:
  /// stride (kEval only): 0 or seq_len for non-overlapping windows; 0 < stride < seq_len for
  /// sliding windows of seq_len tokens every `stride` tokens: window 0 scores all its targets,
  /// window w > 0 only its last `stride` (those past the previous window), so every target is
  /// still scored exactly once, from at least seq_len − stride tokens of context once past the
  /// first window.
  CausalLmDataset(TokenStream tokens, int64_t seq_len, WindowMode mode, int64_t pad_id,
                  int64_t stride = 0);

  /// Targets over all windows: N - 1 in evaluation mode, size() * T in training mode.
  int64_t target_count() const;
  /// The windows with these indices (of `epoch`, which places random-offset windows) as one
  /// batch: tokens, targets, mask [indices.size(), T].
  LmBatch batch(std::span<const int64_t> indices, int64_t epoch = 0) const;

 private:
  WindowMode mode_;
};

/// A whole evaluation stream read as contiguous lanes, window by window, for a model that
/// carries its attention state from one window to the next (stateful evaluation). The U = N − 1
/// inputs are cut into `lanes` lanes of L = ceil(U / lanes) tokens (the last one shorter, and
/// fewer lanes when U < lanes); batch g holds window g of every lane, inputs
/// stream[k·L + g·T, …) and their next tokens as targets, T = seq_len. A lane that has ended
/// leaves a row of padding (every target kIgnoreIndex), as does the rest of a partial last
/// window. Every target is scored exactly once, and each window continues the lane's previous
/// one, so a model carrying its state sees each lane as one sequence.
class LaneWindows {
 public:
  LaneWindows(TokenStream tokens, int64_t seq_len, int64_t lanes, int64_t pad_id);
  /// Batches: windows of the longest lane, ceil(L / T).
  int64_t batches() const { return batches_; }
  /// Lanes that hold tokens (rows of every batch).
  int64_t lanes() const { return lanes_; }
  int64_t lane_length() const { return lane_length_; }
  int64_t seq_len() const { return seq_len_; }
  /// Batch g: tokens, targets, mask [lanes, W], W = T except when every lane's window is
  /// shorter (a short stream); targets count in target_count.
  LmBatch batch(int64_t g) const;

 private:
  TokenStream tokens_;
  int64_t seq_len_;
  int64_t pad_id_;
  int64_t usable_ = 0;  // U = N − 1
  int64_t lanes_ = 0;
  int64_t lane_length_ = 0;
  int64_t batches_ = 0;
};

}  // namespace rota::data
