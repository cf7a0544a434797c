// Plain option structs describing a model; app/setup/model_setup.cpp fills them from a recipe.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "framework/nn/attention/linear_attention.h"
#include "framework/nn/feed_forward.h"
#include "framework/nn/norm.h"
#include "framework/nn/position/position_encoding.h"
#include "models/init_scheme.h"

namespace rota::models {

enum class ModelKind { kCausalLm, kMaskedLm, kClassifier };
enum class NormPlacement { kPre, kPost };
enum class Pooling { kFirstToken, kMean };
/// The attention of every block: linear (O(N), recurrent generation) or softmax (O(N²)).
enum class AttentionFamily { kLinear, kSoftmax };

/// Softmax-attention settings (used when ModelOptions::attention_family == kSoftmax).
struct SoftmaxModelOptions {
  std::optional<double> scale;  // s in ℓ = s·(q·k + a) + b; unset: 1/√D
  double dropout = 0.0;         // dropout on the attention probabilities (training only)
  /// WeNet chunked streaming visibility (encodings.md section 9): query p in chunk ⌊p/C⌋ sees
  /// its own chunk and stream_left_memory earlier frames (< 0: all history). 0: full attention.
  int64_t stream_chunk = 0;
  int64_t stream_left_memory = -1;
  /// Sliding window W >= 1 (causal models): each query sees the previous W keys including
  /// itself. 0: the full window.
  int64_t window = 0;
};

/// The blocks of a hybrid stack that use another attention than the model's (recipe
/// model.hybrid): their indices and their attention family, settings and position encoding.
struct HybridOptions {
  std::vector<int64_t> blocks;  // 0-based, ascending, unique; neither empty nor every block
  AttentionFamily attention_family = AttentionFamily::kSoftmax;
  nn::LinearAttentionOptions attention;  // when attention_family == kLinear
  SoftmaxModelOptions softmax;           // when attention_family == kSoftmax
  /// Acts in the attention of these blocks (never an absolute encoding of its own: the
  /// model's absolute one, if any, is in the embeddings; here it means "nothing more").
  nn::PositionEncoding position = nn::NoPosition{};
};

struct ModelOptions {
  ModelKind kind = ModelKind::kCausalLm;
  int64_t vocab_size = 0;
  int64_t dim = 128;
  int64_t layers = 2;
  int64_t heads = 4;
  /// Key/value heads of softmax attention (grouped-query attention; heads a multiple of it);
  /// 0 means heads. Linear attention refuses any other value than 0 or heads.
  int64_t kv_heads = 0;
  int64_t ffn_dim = 512;  // FFN hidden width F (gated activations: of W_gate and W_up)
  nn::Activation activation = nn::Activation::kGelu;  // kSwiglu / kGeglu: a gated FFN
  NormPlacement norm_placement = NormPlacement::kPre;
  nn::NormKind norm_kind = nn::NormKind::kLayerNorm;  // the blocks' norms and the final norm
  /// Biases of the blocks' projections (attention q/k/v/out, FFN) and LayerNorms' β (block,
  /// final and linear attention's output norm); the heads keep theirs.
  bool bias = true;
  /// Per-part overrides of `bias` (recipe model.biases); an unset part follows `bias`.
  struct BiasOverrides {
    std::optional<bool> qkv;            // q/k/v projections (and linear attention's gate_proj)
    std::optional<bool> attention_out;  // the attention's out_proj
    std::optional<bool> ffn;            // the feed-forward projections
    std::optional<bool> norms;          // the LayerNorms' / GroupNorm's β
  };
  BiasOverrides biases;
  bool qkv_bias() const { return biases.qkv.value_or(bias); }
  bool attention_out_bias() const { return biases.attention_out.value_or(bias); }
  bool ffn_bias() const { return biases.ffn.value_or(bias); }
  bool norm_bias() const { return biases.norms.value_or(bias); }
  double norm_eps = 1e-5;         // epsilon of every norm of the model
  bool final_norm = true;         // a norm after the last block (pre-norm models)
  double dropout = 0.0;           // on embeddings and residual branches
  bool scale_embeddings = false;  // multiply token embeddings by √E (fairseq LMs)
  bool tie_embeddings = true;     // output projection shares the token embedding
  /// Training: keep only each block's input for the backward pass and recompute the block's
  /// internals from it there (one more forward pass of the blocks; autograd/recompute.h).
  bool recompute_blocks = false;
  /// Causal LMs: when > 0 and shorter than a training sequence, the loss runs the sequence in
  /// segments of this many tokens, keeping only each block's attention state at the segment
  /// boundaries; the backward recomputes one segment at a time and carries the state's gradient
  /// back (CausalLm::loss). 0: the whole sequence at once.
  int64_t segment_length = 0;
  InitScheme init_scheme = InitScheme::kPyTorch;  // the recipe's default; see init_scheme.h
  double init_std = 0.02;                        // σ of kNormal and kGpt2
  AttentionFamily attention_family = AttentionFamily::kLinear;
  /// Linear attention settings (dim, heads, causal are filled in by the model; the position
  /// encoding comes from `position` below).
  nn::LinearAttentionOptions attention;
  /// The positional encoding of every block, linear and softmax models alike: absolute ones
  /// (sinusoidal, learned) are added to the token embeddings by the Encoder, the others act in
  /// the attention (the layers refuse the ones of the other family). Default: LRPE Type 2 with
  /// a learnable Householder P.
  nn::PositionEncoding position = nn::LrpeOptions{};
  bool add_sinusoidal = false;  // also add sinusoidal absolute embeddings (base 10000) next to
                                // an encoding acting in attention (the LRPE paper's LMs keep
                                // them)
  SoftmaxModelOptions softmax;  // used when attention_family == kSoftmax
  /// A hybrid stack: these blocks use hybrid->attention_family / attention / softmax /
  /// position instead of the fields above. Absent: every block is alike.
  std::optional<HybridOptions> hybrid;
  // Classifier.
  int64_t num_classes = 2;
  Pooling pooling = Pooling::kMean;
  DType dtype = DType::kF32;
};

/// Whether block i (0-based) is one of the hybrid's blocks.
bool is_hybrid_block(const ModelOptions& o, int64_t block);

/// The options one block is built from: `o` with the hybrid's attention family, settings and
/// position for a hybrid block, `hybrid` cleared, and the decay's depth (attention.decay.layer,
/// .layers) set to this block. Every per-block consumer (blocks, FLOPs, memory, init) uses it.
ModelOptions block_options(const ModelOptions& o, int64_t block);

/// True when every block uses linear attention (recurrent generation without a key cache).
bool all_blocks_linear(const ModelOptions& o);

}  // namespace rota::models
