// Initialisation schemes: which distribution each kind of parameter of a model starts from.
#pragma once

#include "framework/nn/linear.h"

namespace rota::models {

struct ModelOptions;

/// The recipe's `model.init_scheme` (docs/recipes.md, "Initialisation"). L = layers, E = width,
/// σ = ModelOptions::init_std; biases start at 0 unless stated.
enum class InitScheme {
  /// Every projection, embedding and head N(0, σ²) (BERT; GPT-2 without its residual scaling).
  kNormal,
  /// kNormal, but the projections that write into the residual stream (attention out_proj and
  /// the feed-forward fc2 or down_proj) N(0, (σ/√(2L))²) (GPT-2, Radford et al. 2019).
  kGpt2,
  /// Every projection and head N(0, 1/fan_in); embeddings N(0, 1/E).
  kWidthScaled,
  /// PyTorch's nn.Linear default for every projection and head (weight and bias
  /// U(−1/√fan_in, 1/√fan_in)); embeddings N(0, 1/E) (nn.Embedding's own N(0, 1) would give a
  /// tied output head logits of size √E).
  kPyTorch,
  /// fairseq's transformer LM: q, k, v Xavier-uniform with gain 1/√2 (bias nn.Linear's),
  /// out_proj Xavier-uniform (bias 0), the feed-forward nn.Linear's default, embeddings and an
  /// untied output head N(0, 1/E), a classifier head nn.Linear's default.
  kFairseq,
};

/// The starting distributions of one model's parameters under its scheme.
struct ParameterInits {
  nn::WeightInit attention_input;   // q, k, v projections
  nn::WeightInit attention_output;  // out_proj
  nn::WeightInit ffn_first;         // fc1, or a gated FFN's gate_proj and up_proj
  nn::WeightInit ffn_second;        // fc2, or a gated FFN's down_proj
  nn::WeightInit lm_head;           // untied LM output projection (no bias)
  nn::WeightInit classifier_head;   // classifier output layer
  double embedding_std = 0.02;      // token embeddings and learned absolute positions
};

ParameterInits parameter_inits(const ModelOptions& options);

const char* init_scheme_name(InitScheme scheme);

}  // namespace rota::models
