// Plain option structs describing a model; models/registry fills them from a recipe.
#pragma once

#include <cstdint>

#include "framework/nn/attention/linear_attention.h"
#include "framework/nn/feed_forward.h"
#include "framework/nn/position/linear_position.h"

namespace rota::models {

enum class ModelKind { kCausalLm, kMaskedLm, kClassifier };
enum class NormPlacement { kPre, kPost };
enum class Pooling { kFirstToken, kMean };

struct ModelOptions {
  ModelKind kind = ModelKind::kCausalLm;
  int64_t vocab_size = 0;
  int64_t dim = 128;
  int64_t layers = 2;
  int64_t heads = 4;
  int64_t ffn_dim = 512;
  nn::Activation activation = nn::Activation::kGelu;
  NormPlacement norm_placement = NormPlacement::kPre;
  bool final_norm = true;         // LayerNorm after the last block (pre-norm models)
  double dropout = 0.0;           // on embeddings and residual branches
  bool scale_embeddings = false;  // multiply token embeddings by √E (fairseq LMs)
  bool tie_embeddings = true;     // output projection shares the token embedding
  double init_std = 0.02;
  /// Linear attention settings (dim, heads, causal are filled in by the model; the position
  /// encoding comes from `position` below).
  nn::LinearAttentionOptions attention;
  nn::LinearPositionEncoding position = nn::LinearPositionEncoding::kLrpe;
  nn::LrpeOptions lrpe;         // used when position == kLrpe
  int64_t max_positions = 512;  // learned absolute table size
  bool add_sinusoidal = false;  // also add sinusoidal absolute embeddings next to a feature-level
                                // encoding (the LRPE paper's LMs keep them)
  // Classifier.
  int64_t num_classes = 2;
  Pooling pooling = Pooling::kMean;
  DType dtype = DType::kF32;
};

}  // namespace rota::models
