// The shared trunk of every model: token embedding (+ absolute positions) and the blocks.
#pragma once

#include <memory>
#include <vector>

#include "framework/nn/embedding.h"
#include "framework/nn/module_list.h"
#include "framework/nn/position/absolute.h"
#include "models/transformer_block.h"

namespace rota::models {

/// Generation state of the whole trunk, one entry per block: the recurrent state of a linear
/// block (layers[i]) or the key/value cache of a softmax block of a hybrid stack (caches[i]);
/// the other entry of a block stays empty. Empty for an all-softmax model (no step()).
struct EncoderState {
  std::vector<nn::LinearAttentionState> layers;
  std::vector<nn::SoftmaxAttentionCache> caches;
  int64_t position = 0;
};

/// Children: `embed`, optionally `pos_embed` (learned absolute), `blocks.<i>`, `final_norm`
/// (pre-norm models). Masked LM and classifier share these names, so a classifier can start
/// from a masked LM checkpoint. A softmax model with the T5 encoding builds one bias table for
/// the whole stack, owned by the first block (`blocks.0.attn.position.weight`) and used by all.
class Encoder : public nn::Module {
 public:
  Encoder(const ModelOptions& options, bool causal, Generator& init_gen,
          std::shared_ptr<Generator> dropout_gen);
  /// ids: i64 [B, N] → hidden states [B, N, E]. key_mask: bidirectional only, [B, N]. With
  /// options.recompute_blocks, training passes save only each block's input and recompute the
  /// block in the backward (same gradients, one more forward pass of the blocks).
  /// segment_ids: undefined or [B, N] integers, packed documents (a document's tokens
  /// contiguous): no attention or state crosses documents, and absolute position embeddings
  /// restart at each document, so every document gets the hidden states it gets alone.
  Variable forward(const Tensor& ids, const Tensor& key_mask = Tensor(),
                   const Tensor& segment_ids = Tensor()) const;
  /// forward() without block recomputation that also records each block's attention input and
  /// output (io gets one entry per block, in order).
  Variable forward_recording(const Tensor& ids, std::vector<TransformerBlock::AttentionIO>& io,
                             const Tensor& key_mask = Tensor()) const;
  /// True when forward_segment() works: a causal stack of linear-attention blocks that carry
  /// their state (nn::LinearAttention::carries_state; no softmax or hybrid blocks).
  bool supports_segments() const;
  /// What forward_segment() returns: hidden states [B, N, E] and each block's attention state.
  struct Segment {
    Variable hidden;
    std::vector<Variable> states;
  };
  /// One segment of a longer sequence: ids [B, N] at positions offset … offset + N − 1, each
  /// block continuing from states[i] (empty or undefined entries: the start of the sequence).
  /// Segments chained through their states give the hidden states of the whole sequence, and
  /// through autograd its gradients. Throws rota::Error when !supports_segments().
  /// With segment_ids [B, N], the states continue each row's first document (whose positions
  /// continue from offset) and the returned ones are its last document's.
  /// positions: the absolute encodings' per-token positions [B, N] (i64) when the segment is
  /// part of a packed window (document_positions of the whole window, narrowed); undefined:
  /// derived from segment_ids with the first document continuing from offset.
  Segment forward_segment(const Tensor& ids, int64_t offset, const std::vector<Variable>& states,
                          const Tensor& segment_ids = Tensor(),
                          const Tensor& positions = Tensor()) const;
  /// True when step() works: every block linear (recurrent state), or a causal hybrid stack
  /// (linear blocks keep their recurrent state, softmax blocks a key/value cache). An
  /// all-softmax model: false (generate with full forward passes).
  bool supports_step() const;
  EncoderState initial_state(int64_t batch) const;
  /// One token per sequence: ids [B] → hidden [B, E] (causal trunks only; no gradient).
  /// Throws rota::Error when !supports_step().
  Tensor step(const Tensor& ids, EncoderState& state) const;
  int64_t num_blocks() const { return static_cast<int64_t>(blocks_->size()); }
  const TransformerBlock& block(int64_t i) const { return *(*blocks_)[i]; }
  const nn::Embedding& embedding() const { return *embed_; }
  const ModelOptions& options() const { return options_; }
  /// Each token's position in its document for segment_ids [B, N]: offset + t in a row's first
  /// document, t − (the document's first column) in the later ones → i64 [B, N].
  static Tensor document_positions(const Tensor& segment_ids, int64_t offset);
  /// The same with each row's first document at its own position: first_positions[b] + t.
  static Tensor document_positions(const Tensor& segment_ids,
                                   const std::vector<int64_t>& first_positions);

 private:
  /// Token embeddings (scaled) plus absolute positions starting at `offset`: [B, N, E]. With
  /// segment_ids the positions restart at each document after a row's first; `positions`
  /// [B, N], when defined, gives them directly.
  Variable embed(const Tensor& ids, int64_t offset, const Tensor& segment_ids,
                 const Tensor& positions = Tensor()) const;

  ModelOptions options_;
  std::shared_ptr<nn::Embedding> embed_;
  std::shared_ptr<nn::SinusoidalPositionEmbedding> sinusoidal_;
  std::shared_ptr<nn::LearnedPositionEmbedding> learned_;
  std::shared_ptr<nn::Dropout> dropout_;
  std::shared_ptr<Generator> dropout_gen_;  // the blocks' dropout stream (restored to recompute)
  std::shared_ptr<nn::ModuleList<TransformerBlock>> blocks_;
  std::shared_ptr<nn::Norm> final_norm_;
};

}  // namespace rota::models
