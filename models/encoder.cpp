// Model trunk.
#include "models/encoder.h"

#include <cmath>
#include <string>

#include "framework/autograd/grad_mode.h"
#include "framework/autograd/ops/elementwise.h"
#include "framework/autograd/ops/shape.h"
#include "framework/nn/position/t5_bias.h"

namespace rota::models {

namespace {

bool is_softmax(const ModelOptions& o) {
  return o.attention_family == AttentionFamily::kSoftmax;
}

/// A softmax encoding that acts inside the attention (not absolute, not NoPE).
bool softmax_encoding_is_relative(const std::string& name) {
  return name != "none" && name != "nope" && name != "sinusoidal" && name != "learned";
}

bool uses_sinusoidal_embedding(const ModelOptions& o) {
  if (is_softmax(o)) {
    const std::string& name = o.softmax.encoding;
    return name == "sinusoidal" || (o.add_sinusoidal && softmax_encoding_is_relative(name));
  }
  return o.position == nn::LinearPositionEncoding::kSinusoidal ||
         (o.add_sinusoidal && nn::acts_on_features(o.position));
}

bool uses_learned_embedding(const ModelOptions& o) {
  return is_softmax(o) ? o.softmax.encoding == "learned"
                       : o.position == nn::LinearPositionEncoding::kLearned;
}

/// T5's bias table, one per stack (encodings.md section 6), initialised as the layer would.
std::shared_ptr<nn::RelativeAttentionEncoding> shared_t5_table(const ModelOptions& o, bool causal,
                                                               Generator& init_gen) {
  nn::T5BiasOptions t5;
  t5.heads = o.heads;
  t5.num_buckets = o.softmax.params.t5_buckets;
  t5.max_distance = o.softmax.params.t5_max_distance;
  t5.bidirectional = o.softmax.t5_bidirectional.value_or(!causal);
  t5.init_std = 1.0 / std::sqrt(static_cast<double>(o.dim));  // HF: d_model^−1/2
  t5.dtype = o.dtype;
  return std::make_shared<nn::T5RelativeBias>(t5, init_gen);
}

}  // namespace

Encoder::Encoder(const ModelOptions& o, bool causal, Generator& init_gen,
                 std::shared_ptr<Generator> dropout_gen)
    : options_(o) {
  ROTA_CHECK(o.vocab_size > 0, "model: vocab_size must be positive, got {}", o.vocab_size);
  embed_ = register_module(
      "embed",
      std::make_shared<nn::Embedding>(
          nn::EmbeddingOptions{o.vocab_size, o.dim, std::nullopt, o.init_std, o.dtype}, init_gen));
  if (uses_sinusoidal_embedding(o)) {
    sinusoidal_ =
        std::make_shared<nn::SinusoidalPositionEmbedding>(o.dim, o.dtype, o.sinusoidal_base);
  } else if (uses_learned_embedding(o)) {
    learned_ =
        register_module("pos_embed", std::make_shared<nn::LearnedPositionEmbedding>(
                                         o.max_positions, o.dim, init_gen, o.init_std, o.dtype));
  }
  dropout_ = register_module("dropout", std::make_shared<nn::Dropout>(o.dropout, dropout_gen));
  blocks_ = register_module("blocks", std::make_shared<nn::ModuleList<TransformerBlock>>());
  SharedAttentionEncoding shared;
  if (is_softmax(o) && o.softmax.encoding == "t5") {
    shared.encoding = shared_t5_table(o, causal, init_gen);
  }
  for (int64_t i = 0; i < o.layers; ++i) {
    shared.owner = i == 0;  // the first block registers the shared table, the others borrow it
    blocks_->push_back(
        std::make_shared<TransformerBlock>(o, causal, init_gen, dropout_gen, shared));
  }
  if (o.final_norm && o.norm_placement == NormPlacement::kPre) {
    final_norm_ = register_module("final_norm", std::make_shared<nn::LayerNorm>(nn::NormOptions{
                                                    o.dim, o.norm_eps, true, o.dtype}));
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

bool Encoder::supports_step() const {
  return !is_softmax(options_);
}

EncoderState Encoder::initial_state(int64_t batch) const {
  EncoderState state;
  if (!supports_step()) return state;
  for (const auto& block : *blocks_)
    state.layers.push_back(block->attention().initial_state(batch));
  return state;
}

Tensor Encoder::step(const Tensor& ids, EncoderState& state) const {
  ROTA_CHECK(supports_step(),
             "model: step() needs linear attention (a recurrent state); this model uses softmax "
             "attention, so generate with full forward passes (check supports_step())");
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
