// Token embedding table.
#include "framework/nn/embedding.h"

#include "framework/autograd/ops/embedding.h"
#include "framework/nn/init.h"

namespace rota::nn {

Embedding::Embedding(const EmbeddingOptions& options, Generator& gen) : options_(options) {
  ROTA_CHECK(options.num_embeddings > 0 && options.embedding_dim > 0,
             "Embedding: sizes must be positive, got {} x {}", options.num_embeddings,
             options.embedding_dim);
  Tensor w = Tensor::empty({options.num_embeddings, options.embedding_dim}, options.dtype);
  init::normal_(w, gen, 0.0, options.init_std);
  if (options.padding_idx) {
    ROTA_CHECK(*options.padding_idx >= 0 && *options.padding_idx < options.num_embeddings,
               "Embedding: padding_idx {} outside [0, {})", *options.padding_idx,
               options.num_embeddings);
    w.narrow(0, *options.padding_idx, 1).fill(0.0);
  }
  weight_ = register_parameter("weight", w);
}

Variable Embedding::forward(const Tensor& ids) const {
  return embedding(ids, weight_, options_.padding_idx);
}

}  // namespace rota::nn
