// The three model kinds: causal LM, masked LM and sequence classifier, on the shared Encoder.
#pragma once

#include <memory>

#include "framework/nn/linear.h"
#include "models/encoder.h"

namespace rota::models {

/// Decoder-only LM. Children: `encoder` (causal), `lm_head` (absent when tied: logits use
/// the token embedding's weight).
class CausalLm : public nn::Module {
 public:
  /// What a stateful run (train.carry_state) carries from one window of a stream to the next:
  /// the position of the next window's first token and each block's attention state [B, …]
  /// (Encoder::forward_segment), detached (no graph: gradients stop at the window boundary,
  /// truncated backpropagation through time). Empty states: the start of a stream.
  struct CarriedState {
    int64_t position = 0;
    std::vector<Tensor> states;
    /// Packed documents (segment_ids given): per row, the position inside its document of the
    /// window's first token, which the caller sets before each window (the model cannot tell
    /// whether a row's last token ended its document). 0: the row's first document starts with
    /// the window, from a zero state (whatever the row's carried state). k > 0: it continues
    /// the carried state, k of its tokens before the window (its absolute positions go on from
    /// k). Empty: every row's 0, which only the start of a stream may have.
    std::vector<int64_t> document_positions;
  };

  CausalLm(const ModelOptions& options, Generator& init_gen,
           std::shared_ptr<Generator> dropout_gen);
  /// ids [B, N] → logits [B, N, V]. segment_ids: undefined or [B, N] integers, packed
  /// documents (Encoder::forward): each document's logits are those it gets alone.
  Variable forward(const Tensor& ids, const Tensor& segment_ids = Tensor()) const;
  /// Mean cross-entropy of next-token targets [B, N] (ignore_index −100). With
  /// options.segment_length S > 0 and N > S, computed segment by segment (segmented_loss).
  /// segment_ids as in forward (a target that crosses into the next document is the caller's
  /// to ignore).
  Variable loss(const Tensor& ids, const Tensor& targets,
                const Tensor& segment_ids = Tensor()) const;
  /// The same mean over segments of `segment_length` tokens: each segment continues from the
  /// attention states the one before left (Encoder::forward_segment) and is one recomputed
  /// node (autograd/recompute.h) that keeps only those states, so the memory of a training
  /// step is one segment's activations plus the states at the boundaries, whatever N. Same
  /// value and gradients as the whole sequence up to rounding (the sum runs per segment), and
  /// the same without dropout; with dropout the masks are drawn segment by segment. Needs
  /// Encoder::supports_segments().
  Variable segmented_loss(const Tensor& ids, const Tensor& targets, int64_t segment_length,
                          const Tensor& segment_ids = Tensor()) const;
  /// Mean cross-entropy of a window that continues `carried`: positions carried.position …,
  /// every block starting from its carried state. On return `carried` holds the state after
  /// the window (detached) and the next position. In segments of options.segment_length when
  /// that is shorter than the window (as loss()). The forward values are those of the whole
  /// stream read in one piece; the gradients are truncated at the window's start. Needs
  /// Encoder::supports_segments().
  /// segment_ids: undefined, or [B, N] packed documents as in forward, with the row's first
  /// document continuing as carried.document_positions says and the state carried out of the
  /// row's last document.
  Variable continued_loss(const Tensor& ids, const Tensor& targets, CarriedState& carried,
                          const Tensor& segment_ids = Tensor()) const;
  /// Each position's cross-entropy, without gradients: ids, targets [B, N] → [B, N] in the
  /// model's float dtype (0 where the target is −100). The logits are formed for
  /// `rows_per_chunk` positions at a time, so memory stays [rows_per_chunk, V] however long N;
  /// with options.segment_length the trunk runs segment by segment too (states carried).
  /// With `carried` (not null), the window continues it as in continued_loss (segment_ids
  /// too) and `carried` moves past the window.
  Tensor token_losses(const Tensor& ids, const Tensor& targets, int64_t rows_per_chunk = 1024,
                      CarriedState* carried = nullptr, const Tensor& segment_ids = Tensor()) const;
  /// True for linear attention and for hybrid stacks (softmax blocks keep a key/value cache);
  /// false for an all-softmax model, whose step() throws (a generator then runs full forward
  /// passes over the growing sequence).
  bool supports_step() const { return encoder_->supports_step(); }
  EncoderState initial_state(int64_t batch) const { return encoder_->initial_state(batch); }
  /// Feeds one token per sequence (ids [B]); returns next-token logits [B, V]. Throws
  /// rota::Error when !supports_step().
  Tensor step(const Tensor& ids, EncoderState& state) const;
  const Encoder& encoder() const { return *encoder_; }

 private:
  Variable project(const Variable& hidden) const;
  /// The summed token losses of ids, targets [B, N] at positions offset …, the blocks starting
  /// from `states` (undefined or empty: zeros), in segments of segment_length (each one
  /// recomputed node) or in one piece when segment_length is 0; `final_states` receives the
  /// states after the last token. Packed documents: segment_ids [B, N] and the absolute
  /// encodings' positions in their documents [B, N] (Encoder::document_positions).
  Variable summed_loss_from(const Tensor& ids, const Tensor& targets, int64_t offset,
                            int64_t segment_length, std::vector<Variable> states,
                            std::vector<Variable>& final_states, const Tensor& segment_ids,
                            const Tensor& positions) const;
  std::shared_ptr<Encoder> encoder_;
  std::shared_ptr<nn::Linear> lm_head_;
  std::shared_ptr<Generator> dropout_gen_;  // restored when a segment is recomputed
};

/// Bidirectional LM trained by masked-token prediction. Children: `encoder`, `mlm_norm`,
/// `mlm_bias` (output bias over the vocabulary; the projection is the tied embedding).
class MaskedLm : public nn::Module {
 public:
  MaskedLm(const ModelOptions& options, Generator& init_gen,
           std::shared_ptr<Generator> dropout_gen);
  /// ids [B, N], key_mask [B, N] (1 real, 0 padding) → logits [B, N, V]. segment_ids:
  /// undefined or [B, N] integers, packed documents (Encoder::forward).
  Variable forward(const Tensor& ids, const Tensor& key_mask = Tensor(),
                   const Tensor& segment_ids = Tensor()) const;
  /// Cross-entropy over the masked positions (targets −100 elsewhere).
  Variable loss(const Tensor& ids, const Tensor& targets, const Tensor& key_mask = Tensor(),
                const Tensor& segment_ids = Tensor()) const;

 private:
  /// The normalised hidden states the tied output projection reads: [B, N, E].
  Variable hidden(const Tensor& ids, const Tensor& key_mask, const Tensor& segment_ids) const;

  std::shared_ptr<Encoder> encoder_;
  std::shared_ptr<nn::LayerNorm> mlm_norm_;
  Variable mlm_bias_;
};

/// Sequence classifier: the masked LM's encoder (same parameter names, so `init_from` a masked
/// LM checkpoint works), pooling, dropout and a linear head. Children: `encoder`, `classifier`.
class Classifier : public nn::Module {
 public:
  Classifier(const ModelOptions& options, Generator& init_gen,
             std::shared_ptr<Generator> dropout_gen);
  /// ids [B, N], key_mask [B, N] → class logits [B, C].
  Variable forward(const Tensor& ids, const Tensor& key_mask) const;
  /// Mean cross-entropy against labels [B].
  Variable loss(const Tensor& ids, const Tensor& key_mask, const Tensor& labels) const;

 private:
  ModelOptions options_;
  std::shared_ptr<Encoder> encoder_;
  std::shared_ptr<nn::Dropout> dropout_;
  std::shared_ptr<nn::Linear> head_;
};

}  // namespace rota::models
