// Streaming chunk attention: chunk visibility mask (full form) and the cached chunk replay.
#include "framework/nn/attention/streaming_chunk_attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "framework/autograd/ops/shape.h"

namespace rota::nn {

Tensor chunk_visibility_mask(int64_t n, int64_t chunk_size, int64_t memory, DType dtype) {
  ROTA_CHECK(n >= 0 && chunk_size >= 1, "chunk_visibility_mask: bad N = {} or chunk size {}", n,
             chunk_size);
  std::vector<double> mask(n * n, 0.0);
  for (int64_t p = 0; p < n; ++p) {
    const int64_t c0 = p / chunk_size * chunk_size;
    const int64_t lo = memory < 0 ? 0 : std::max<int64_t>(0, c0 - memory);
    const int64_t hi = std::min(n, c0 + chunk_size);
    for (int64_t j = lo; j < hi; ++j) mask[p * n + j] = 1.0;
  }
  return tensor_from(mask, {n, n}, dtype);
}

StreamingChunkAttention::StreamingChunkAttention(const StreamingChunkAttentionOptions& options,
                                                 Generator& gen,
                                                 std::shared_ptr<Generator> dropout_gen)
    : options_(options), dropout_gen_(std::move(dropout_gen)) {
  const int64_t e = options.dim;
  ROTA_CHECK(e > 0 && options.heads > 0 && e % options.heads == 0,
             "StreamingChunkAttention: dim {} must be a positive multiple of heads {}", e,
             options.heads);
  ROTA_CHECK(options.chunk_size >= 1, "StreamingChunkAttention: chunk_size must be >= 1, got {}",
             options.chunk_size);
  ROTA_CHECK(options.dropout >= 0.0 && options.dropout < 1.0,
             "StreamingChunkAttention: dropout {} must be in [0, 1)", options.dropout);
  ROTA_CHECK(options.dropout == 0.0 || dropout_gen_ != nullptr,
             "StreamingChunkAttention: dropout {} needs a dropout generator", options.dropout);
  const LinearOptions proj{e, e, true, options.dtype, options.projection_init};
  q_proj_ = register_module("q_proj", std::make_shared<Linear>(proj, gen));
  k_proj_ = register_module("k_proj", std::make_shared<Linear>(proj, gen));
  v_proj_ = register_module("v_proj", std::make_shared<Linear>(proj, gen));
  out_proj_ = register_module(
      "out_proj",
      std::make_shared<Linear>(LinearOptions{e, e, true, options.dtype, options.output_init}, gen));
  RelativeXlOptions xl;
  xl.heads = options.heads;
  xl.head_dim = head_dim();
  xl.pe_dim = options.pe_dim > 0 ? options.pe_dim : e;
  xl.layout = options.layout;
  xl.dtype = options.dtype;
  rel_pos_ = register_module("rel_pos", std::make_shared<RelativeXlEncoding>(xl, gen));
}

Variable StreamingChunkAttention::split_heads(const Variable& x) const {
  return permute(reshape(x, {x.size(0), x.size(1), options_.heads, head_dim()}), {0, 2, 1, 3});
}

Variable StreamingChunkAttention::merge_heads(const Variable& heads_out) const {
  const Variable t = permute(heads_out, {0, 2, 1, 3});
  return out_proj_->forward(reshape(t, {t.size(0), t.size(1), options_.dim}));
}

AttentionCall StreamingChunkAttention::base_call() const {
  AttentionCall call;
  call.scale = 1.0 / std::sqrt(static_cast<double>(head_dim()));
  call.causal = options_.causal;
  call.dropout = options_.dropout;
  call.generator = dropout_gen_.get();
  call.training = is_training();
  return call;
}

Variable StreamingChunkAttention::forward(const Variable& x, const Tensor& key_padding_mask) const {
  ROTA_CHECK(x.dim() == 3 && x.size(2) == options_.dim,
             "StreamingChunkAttention: x {} must be [B, N, {}]", shape_str(x.shape()),
             options_.dim);
  const int64_t n = x.size(1);
  AttentionCall call = base_call();
  call.visibility_mask =
      chunk_visibility_mask(n, options_.chunk_size, options_.memory, DType::kF32);
  call.key_padding_mask = key_padding_mask;
  const Variable q = split_heads(q_proj_->forward(x));
  const Variable k = split_heads(k_proj_->forward(x));
  const Variable v = split_heads(v_proj_->forward(x));
  return merge_heads(rel_pos_->attend(q, k, v, call));
}

Variable StreamingChunkAttention::forward_chunk(const Variable& x,
                                                StreamingChunkCache& cache) const {
  ROTA_CHECK(x.dim() == 3 && x.size(2) == options_.dim && x.size(1) >= 1 &&
                 x.size(1) <= options_.chunk_size,
             "StreamingChunkAttention::forward_chunk: x {} must be [B, n, {}] with 1 <= n <= "
             "chunk_size {}",
             shape_str(x.shape()), options_.dim, options_.chunk_size);
  ROTA_CHECK(cache.position % options_.chunk_size == 0,
             "StreamingChunkAttention::forward_chunk: the cache is at frame {}, not at a chunk "
             "boundary (chunk_size {}); only the last chunk of a stream may be short",
             cache.position, options_.chunk_size);
  const Variable q = split_heads(q_proj_->forward(x));
  Variable k = split_heads(k_proj_->forward(x));
  Variable v = split_heads(v_proj_->forward(x));
  const int64_t cached = cache.k.defined() ? cache.k.size(2) : 0;
  if (cached > 0) {
    ROTA_CHECK(cache.k.size(0) == x.size(0),
               "StreamingChunkAttention::forward_chunk: cache batch {} vs chunk {}",
               cache.k.size(0), shape_str(x.shape()));
    k = concat({Variable(cache.k), k}, 2);
    v = concat({Variable(cache.v), v}, 2);
  }
  // Window [lo, c1) with lo = c0 − cached: query i sits at c0 + i, i.e. at key index cached + i.
  AttentionCall call = base_call();
  call.query_offset = cached;
  const Variable out = rel_pos_->attend(q, k, v, call);

  // Keep the last M frames (all for M < 0) for the next chunk; copies, so the cache does not
  // pin the whole window.
  const int64_t total = k.size(2);
  const int64_t keep = options_.memory < 0 ? total : std::min(total, options_.memory);
  cache.k = k.data().narrow(2, total - keep, keep).clone();
  cache.v = v.data().narrow(2, total - keep, keep).clone();
  cache.position += x.size(1);
  return merge_heads(out);
}

}  // namespace rota::nn
