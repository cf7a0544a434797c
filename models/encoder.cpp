// Model trunk.
#include "models/encoder.h"

#include <cmath>

#include "framework/autograd/grad_mode.h"
#include "framework/autograd/ops/elementwise.h"
#include "framework/autograd/ops/shape.h"

namespace rota::models {

Encoder::Encoder(const ModelOptions& o, bool causal, Generator& init_gen,
                 std::shared_ptr<Generator> dropout_gen)
    : options_(o) {
  ROTA_CHECK(o.vocab_size > 0, "model: vocab_size must be positive, got {}", o.vocab_size);
  embed_ = register_module(
      "embed",
      std::make_shared<nn::Embedding>(
          nn::EmbeddingOptions{o.vocab_size, o.dim, std::nullopt, o.init_std, o.dtype}, init_gen));
  if (o.position == nn::LinearPositionEncoding::kSinusoidal ||
      (o.add_sinusoidal && nn::acts_on_features(o.position))) {
    sinusoidal_ = std::make_shared<nn::SinusoidalPositionEmbedding>(o.dim, o.dtype);
  } else if (o.position == nn::LinearPositionEncoding::kLearned) {
    learned_ =
        register_module("pos_embed", std::make_shared<nn::LearnedPositionEmbedding>(
                                         o.max_positions, o.dim, init_gen, o.init_std, o.dtype));
  }
  dropout_ = register_module("dropout", std::make_shared<nn::Dropout>(o.dropout, dropout_gen));
  blocks_ = register_module("blocks", std::make_shared<nn::ModuleList<TransformerBlock>>());
  for (int64_t i = 0; i < o.layers; ++i) {
    blocks_->push_back(std::make_shared<TransformerBlock>(o, causal, init_gen, dropout_gen));
  }
  if (o.final_norm && o.norm_placement == NormPlacement::kPre) {
    final_norm_ = register_module(
        "final_norm", std::make_shared<nn::LayerNorm>(nn::NormOptions{o.dim, 1e-5, true, o.dtype}));
  }
}

Variable Encoder::embed(const Tensor& ids, int64_t offset) const {
  Variable x = embed_->forward(ids);
  if (options_.scale_embeddings) x = x * std::sqrt(static_cast<double>(options_.dim));
  const int64_t n = ids.size(-1);
  if (sinusoidal_) x = x + sinusoidal_->forward(n, offset);
  if (learned_) x = x + learned_->forward(n, offset);
  return x;
}

Variable Encoder::forward(const Tensor& ids, const Tensor& key_mask) const {
  ROTA_CHECK(ids.dim() == 2, "model: ids {} must be [B, N]", shape_str(ids.shape()));
  Variable x = dropout_->forward(embed(ids, 0));
  for (const auto& block : *blocks_) x = block->forward(x, key_mask);
  return final_norm_ ? final_norm_->forward(x) : x;
}

EncoderState Encoder::initial_state(int64_t batch) const {
  EncoderState state;
  for (const auto& block : *blocks_)
    state.layers.push_back(block->attention().initial_state(batch));
  return state;
}

Tensor Encoder::step(const Tensor& ids, EncoderState& state) const {
  ROTA_CHECK(ids.dim() == 1, "model: step ids {} must be [B]", shape_str(ids.shape()));
  NoGradGuard no_grad;
  Tensor x = embed(ids.reshape({ids.size(0), 1}), state.position)
                 .data()
                 .reshape({ids.size(0), options_.dim});
  for (size_t i = 0; i < blocks_->size(); ++i) x = (*blocks_)[i]->step(x, state.layers[i]);
  ++state.position;
  return final_norm_ ? final_norm_->forward(Variable(x)).data() : x;
}

}  // namespace rota::models
