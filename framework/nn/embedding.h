// Token embedding table: ids → rows of a [vocab, dim] weight.
#pragma once

#include <optional>

#include "framework/nn/module.h"
#include "framework/tensor/random.h"

namespace rota::nn {

struct EmbeddingOptions {
  int64_t num_embeddings = 0;
  int64_t embedding_dim = 0;
  std::optional<int64_t> padding_idx;  // that row starts at zero and gets no gradient
  double init_std = 1.0;               // normal(0, init_std), PyTorch's default is 1
  DType dtype = DType::kF32;
};

/// Parameter: `weight` [num_embeddings, embedding_dim].
class Embedding : public Module {
 public:
  std::optional<ParameterRole> parameter_role() const override { return ParameterRole::kEmbedding; }
  Embedding(const EmbeddingOptions& options, Generator& gen);
  /// ids: i32/i64 [...] → [..., embedding_dim].
  Variable forward(const Tensor& ids) const;
  const Variable& weight() const { return weight_; }

 private:
  EmbeddingOptions options_;
  Variable weight_;
};

}  // namespace rota::nn
