// Per-block model options of hybrid stacks (see model_options.h).
#include "models/model_options.h"

#include <algorithm>

namespace rota::models {

bool is_hybrid_block(const ModelOptions& o, int64_t block) {
  return o.hybrid && std::binary_search(o.hybrid->blocks.begin(), o.hybrid->blocks.end(), block);
}

ModelOptions block_options(const ModelOptions& o, int64_t block) {
  ModelOptions b = o;
  if (is_hybrid_block(o, block)) {
    const HybridOptions& h = *o.hybrid;
    b.attention_family = h.attention_family;
    const auto norm_eps = b.attention.norm_eps;
    b.attention = h.attention;
    b.attention.norm_eps = norm_eps;
    b.softmax = h.softmax;
    b.position = h.position;
  }
  // kv_heads is for the softmax blocks; a hybrid's linear blocks keep a head per query head.
  if (o.hybrid && b.attention_family == AttentionFamily::kLinear) b.kv_heads = 0;
  b.hybrid.reset();
  b.attention.decay.layer = block;  // a decay schedule may depend on the block's depth
  b.attention.decay.layers = o.layers;
  return b;
}

bool all_blocks_linear(const ModelOptions& o) {
  for (int64_t i = 0; i < o.layers; ++i) {
    if (block_options(o, i).attention_family != AttentionFamily::kLinear) return false;
  }
  return true;
}

}  // namespace rota::models
