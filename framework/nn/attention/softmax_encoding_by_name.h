// Every softmax-attention positional encoding selectable by one name, with its parameters.
#pragma once

#include <string>

#include "framework/nn/attention/softmax_attention.h"
#include "framework/nn/position/relative_xl.h"
#include "framework/tensor/random.h"

namespace rota::nn {

/// Parameters of every encoding; each name reads only its own fields.
struct SoftmaxEncodingParams {
  int64_t heads = 1;     // H of the layer
  int64_t head_dim = 0;  // D of the layer
  bool causal = false;   // T5 bucket split default (bidirectional unless causal)
  // RoPE
  double rope_base = 10000.0;
  // T5
  int64_t t5_buckets = 32;
  int64_t t5_max_distance = 128;
  // Shaw
  int64_t shaw_clip = 16;
  bool shaw_values = false;
  // Transformer-XL
  int64_t xl_pe_dim = 0;  // 0 = H·D
  SinusoidLayout xl_layout = SinusoidLayout::kInterleaved;
  // Generalised skew
  int64_t skew_max_len = 512;
  bool skew_per_head = false;
  DType dtype = DType::kF32;
};

/// Builds the encoding options of `SoftmaxAttentionOptions::encoding` from a name:
/// "none"/"nope", "rope"/"rope_adjacent", "rope_half", "alibi", "t5" (built by the layer),
/// "shaw", "transformer_xl"/"xl", "skew" (built here as custom encodings, initialised from
/// `gen`). Absolute embeddings ("sinusoidal", "learned") belong to the model, not the layer:
/// they map to "none" here. Unknown names throw, listing every accepted name.
SoftmaxEncodingOptions softmax_encoding_by_name(const std::string& name,
                                                const SoftmaxEncodingParams& params,
                                                Generator& gen);

}  // namespace rota::nn
