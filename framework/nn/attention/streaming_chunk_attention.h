// WeNet-style streaming chunk attention with XL encoding: masked full form and cached chunks.
#pragma once

#include <memory>

#include "framework/nn/linear.h"
#include "framework/nn/position/relative_xl.h"
#include "framework/tensor/random.h"

namespace rota::nn {

/// [N, N] visibility (1 = visible) of encodings.md section 9: query p in chunk c = ⌊p/C⌋ sees
/// keys [max(0, c·C − M), min(N, (c + 1)·C)); memory M < 0 means all history (WeNet's
/// num_left_chunks < 0), M = 0 only its own chunk.
Tensor chunk_visibility_mask(int64_t n, int64_t chunk_size, int64_t memory,
                             DType dtype = DType::kF32);

struct StreamingChunkAttentionOptions {
  int64_t dim = 0;             // model width E
  int64_t heads = 1;           // H; head dim D = E / H
  int64_t chunk_size = 16;     // C queries per chunk
  int64_t memory = -1;         // M frames of left memory; < 0: unlimited
  bool causal = false;         // additionally hide later frames of the own chunk (t > 0)
  double dropout = 0.0;        // attention dropout (training only; needs a dropout generator)
  WeightInit projection_init;  // q, k and v (default: PyTorch's)
  WeightInit output_init;      // out_proj, which writes into the residual stream
  int64_t pe_dim = 0;          // XL sinusoid width; 0 = E
  SinusoidLayout layout = SinusoidLayout::kInterleaved;
  DType dtype = DType::kF32;
};

/// What the chunk-by-chunk form carries between chunks: the projected keys and values of the
/// last M frames (all frames for M < 0) and the absolute position of the next chunk. The XL
/// table is rebuilt from each chunk's t range, so nothing positional is cached.
struct StreamingChunkCache {
  Tensor k;              // [B, H, M', D] (undefined before the first chunk)
  Tensor v;              // [B, H, M', D]
  int64_t position = 0;  // first frame of the next chunk (a multiple of C)
};

/// Multi-head self-attention where the chunk of query p sees M frames of left memory plus its
/// own chunk, with ℓ_ij = s·[(q_i + u)·k_j + (q_i + v)·p(ρ_ij)], s = 1/√D.
/// Children: `q_proj`, `k_proj`, `v_proj`, `out_proj` (Linear with bias), `rel_pos`
/// (RelativeXlEncoding: linear_pos, pos_bias_u, pos_bias_v).
class StreamingChunkAttention : public Module {
 public:
  /// dropout_gen: the model's dropout stream (required when options.dropout > 0).
  StreamingChunkAttention(const StreamingChunkAttentionOptions& options, Generator& gen,
                          std::shared_ptr<Generator> dropout_gen = nullptr);

  /// Full-sequence form: x: [B, N, E] → [B, N, E] under chunk_visibility_mask(N, C, M)
  /// (and causal). key_padding_mask: undefined or [B, N] with 0 for padding.
  Variable forward(const Variable& x, const Tensor& key_padding_mask = Tensor()) const;

  /// One chunk x: [B, n, E] with 1 <= n <= C starting at cache.position (a multiple of C; only
  /// the stream's last chunk may be shorter): keys are the cached frames followed by the chunk
  /// (query_offset = number of cached frames); updates the cache. Gives the same rows as
  /// forward() on the whole sequence (in eval mode: with attention dropout the masks of the two
  /// forms differ). No key padding in this form: a stream has no padding.
  Variable forward_chunk(const Variable& x, StreamingChunkCache& cache) const;

  const StreamingChunkAttentionOptions& options() const { return options_; }
  int64_t head_dim() const { return options_.dim / options_.heads; }
  const RelativeXlEncoding& rel_pos() const { return *rel_pos_; }

 private:
  /// [B, N, E] → [B, H, N, D].
  Variable split_heads(const Variable& x) const;
  /// [B, H, N, D] → [B, N, E] → out_proj.
  Variable merge_heads(const Variable& heads_out) const;
  AttentionCall base_call() const;

  StreamingChunkAttentionOptions options_;
  std::shared_ptr<Generator> dropout_gen_;
  std::shared_ptr<Linear> q_proj_, k_proj_, v_proj_, out_proj_;
  std::shared_ptr<RelativeXlEncoding> rel_pos_;
};

}  // namespace rota::nn
