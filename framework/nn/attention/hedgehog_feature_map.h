// Hedgehog's learnable feature map for linear attention: a per-head projection, then softmax both
// ways.
#pragma once

#include "framework/nn/module.h"

namespace rota::nn {

/// φ(x) = [softmax(x W_h + b_h), softmax(−(x W_h + b_h))] over the feature dimension, per head h
/// (Zhang et al. 2024, "The Hedgehog & the Porcupine"; LoLCATs uses it to linearise pretrained
/// transformers): non-negative, "spiky" like softmax attention's weights, and trainable so that
/// attention transfer can fit it to a softmax layer. Parameters: `weight` [H, D, D] (identity
/// at initialisation) and `bias` [H, D] (zeros).
class HedgehogFeatureMap : public Module {
 public:
  HedgehogFeatureMap(int64_t heads, int64_t head_dim, DType dtype);
  /// x: [B, H, N, D] → [B, H, N, 2D].
  Variable forward(const Variable& x) const;
  int64_t feature_dim() const { return 2 * head_dim_; }

 private:
  int64_t heads_, head_dim_;
  Variable weight_, bias_;
};

}  // namespace rota::nn
