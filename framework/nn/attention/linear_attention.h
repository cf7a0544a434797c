// Multi-head linear attention layer (causal or bidirectional) with LRPE on its features.
#pragma once

#include <memory>
#include <optional>

#include "framework/nn/attention/feature_map.h"
#include "framework/nn/attention/hedgehog_feature_map.h"
#include "framework/nn/attention/state_decay.h"
#include "framework/nn/attention/state_gate.h"
#include "framework/nn/group_norm.h"
#include "framework/nn/linear.h"
#include "framework/nn/norm.h"
#include "framework/nn/position/lrpe.h"
#include "framework/nn/position/permute_former.h"
#include "framework/nn/position/position_encoding.h"

namespace rota::nn {

/// How the attention output is normalised.
enum class LinearAttentionNorm {
  kLayerNorm,    // no denominator, LayerNorm over the model width after attention (LRPE form)
  kRmsNorm,      // no denominator, RMSNorm instead
  kDenominator,  // classic φ(q)·Σφ(k) with a clamp at eps; positive features only
  kGroupNorm,    // no denominator; each head's output normalised on its own (RetNet's GroupNorm)
};

/// A data-dependent gate on the normalised attention output before out_proj:
/// o ← o ⊙ act(x W_g + b_g) (RetNet and GLA: swish; TransNormerLLM's code: sigmoid).
enum class OutputGate { kNone, kSwish, kSigmoid };

struct LinearAttentionOptions {
  int64_t dim = 0;    // model width E
  int64_t heads = 1;  // H; head dim D = E / H
  bool causal = true;
  FeatureMap feature_map = FeatureMap::kOnePlusElu;
  LinearAttentionNorm norm = LinearAttentionNorm::kLayerNorm;
  double denominator_eps = 1e-6;
  std::optional<double> norm_eps;  // eps of the output norm; default 1e-5 LayerNorm, 1e-6 RMSNorm
  int64_t chunk_size = 64;         // causal kernel's chunk C
  /// Fixed per-head decay of the causal state (RetNet, LRPE-d); causal layers only and not
  /// with PermuteFormer, which brings its own decay.
  StateDecayOptions decay;
  /// Data-dependent gating (GLA, SSD) and the update rule (additive, delta); causal layers
  /// only, not with a fixed decay, PermuteFormer or the denominator.
  StateGateOptions state_gate;
  OutputGate output_gate = OutputGate::kNone;
  /// Positional encoding of the features: RoPE, LRPE (head_dim and dtype are filled in from the
  /// layer) or PermuteFormer. None and the absolute encodings (added to the embeddings by the
  /// model) leave attention without one; the softmax-only encodings are refused.
  PositionEncoding position = NoPosition{};
  WeightInit projection_init;  // q, k and v (default: PyTorch's)
  WeightInit output_init;      // out_proj, which writes into the residual stream
  DType dtype = DType::kF32;
  bool qkv_bias = true;     // biases of q/k/v_proj (and of gate_proj, the output gate's input)
  bool output_bias = true;  // bias of out_proj
  bool norm_bias = true;    // β of the LayerNorm / GroupNorm output norm
};

/// Carried state for token-by-token generation: S = Σ k̃ᵀ [v, 1] per head and the position of
/// the next token.
struct LinearAttentionState {
  Tensor kv;  // [B·H, F, D + 1] (the extra column sums k̃ for the denominator); gated: [B·H, F, D]
  int64_t position = 0;  // s of the next token
};

/// Children: `q_proj`, `k_proj`, `v_proj`, `out_proj` (Linear, bias by options), `norm`
/// (LayerNorm / RMSNorm / GroupNorm over E, absent with the denominator), `gate_proj` (with an
/// output gate), `state_gate` (GLA, SSD, delta rule, learnable decay), `lrpe` (LRPE and RoPE) or
/// `permute_former`, `feature_map` (the hedgehog feature map's parameters).
class LinearAttention : public Module {
 public:
  LinearAttention(const LinearAttentionOptions& options, Generator& gen);

  /// x: [B, N, E] → [B, N, E]. key_mask: bidirectional only, [B, N] with 0 for padding.
  /// offset: position of the first row (for continuing a sequence). segment_ids: undefined or
  /// [B, N] integers, packed documents: attention and state stay inside each document (the
  /// relative encodings see the same position differences as in the document alone).
  Variable forward(const Variable& x, const Tensor& key_mask = Tensor(), int64_t offset = 0,
                   const Tensor& segment_ids = Tensor()) const;

  /// Whether forward_segment() works: a causal layer (every causal kernel carries its state).
  bool carries_state() const;
  /// One segment of a longer causal sequence: x [B, N, E] at positions offset … offset + N − 1,
  /// continuing from `state` [B, H, F, D'] (what the earlier positions left; undefined at the
  /// start of the sequence; D' = D + 1 with the denominator). Returns the output [B, N, E] and
  /// the state after the segment. Segments chained through their states give the whole
  /// sequence's outputs, and through autograd its gradients (the state's included). Throws
  /// rota::Error when !carries_state().
  struct Segment {
    Variable output;
    Variable state;
  };
  /// With segment_ids, `state` continues the segment's first document and the state returned
  /// is its last one's.
  Segment forward_segment(const Variable& x, int64_t offset, const Variable& state,
                          const Tensor& segment_ids = Tensor()) const;

  /// A fresh generation state for batch size B.
  LinearAttentionState initial_state(int64_t batch) const;
  /// One token per sequence: x: [B, E] → [B, E], updating state. Same outputs as the causal
  /// forward over the whole prefix; cost independent of the prefix length. No gradient.
  Tensor step(const Tensor& x, LinearAttentionState& state) const;

  const LinearAttentionOptions& options() const { return options_; }
  int64_t head_dim() const { return options_.dim / options_.heads; }
  /// Feature dimension F after the positional encoding.
  int64_t feature_dim() const;

 private:
  /// q or k [B, H, N, D] → features [B, H, N, F]: φ then LRPE at positions offset + n
  /// (PermuteFormer: permutation powers, then φ).
  Variable features(const Variable& x, int64_t offset) const;
  /// PermuteFormer's bidirectional decay γ^s on queries (sign = +1) or γ^(−t) on keys (−1).
  Variable scale_by_decay(const Variable& features, int64_t offset, int sign) const;
  /// The per-head decay rates [H] of the causal kernel (PermuteFormer's or the schedule's);
  /// undefined without a decay.
  Tensor decay_rates(DType dtype) const;
  /// The gated / delta-rule kernels: features q, k [B, H, N, F], values v [B, H, N, D], the
  /// layer input x [B, N, E] → [B, H, N, D].
  /// With `segment`: from segment->state, leaving the final state there.
  Variable gated_attention(Variable q, Variable k, const Variable& v, const Variable& x,
                           Segment* segment, const Tensor& segment_ids) const;
  /// [B, H, N, D] → [B, N, E] → norm → (⊙ gate(x)) → out_proj; x: [B, N, E] the layer input.
  Variable finish(const Variable& heads_out, const Variable& x) const;
  /// forward() and forward_segment(): with `segment`, the causal kernel starts from
  /// segment->state and leaves the final state there.
  Variable attend(const Variable& x, const Tensor& key_mask, int64_t offset, Segment* segment,
                  const Tensor& segment_ids) const;

  LinearAttentionOptions options_;
  std::shared_ptr<Linear> q_proj_, k_proj_, v_proj_, out_proj_, gate_proj_;
  std::shared_ptr<HedgehogFeatureMap> hedgehog_;  // feature_map = kHedgehog
  std::shared_ptr<LayerNorm> layer_norm_;
  std::shared_ptr<RMSNorm> rms_norm_;
  std::shared_ptr<GroupNorm> group_norm_;
  std::vector<double> decay_rates_;  // γ_h of options.decay (empty without one)
  std::shared_ptr<Lrpe> lrpe_;
  std::shared_ptr<PermuteFormer> permute_former_;
  std::shared_ptr<StateGate> state_gate_;
};

}  // namespace rota::nn
