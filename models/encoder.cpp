// Model trunk.
#include "models/encoder.h"

#include <cmath>
#include <variant>

#include "framework/autograd/grad_mode.h"
#include "framework/autograd/ops/elementwise.h"
#include "framework/autograd/ops/shape.h"
#include "framework/autograd/recompute.h"

namespace rota::models {

namespace {

bool is_softmax(const ModelOptions& o) {
  return o.attention_family == AttentionFamily::kSoftmax;
}

/// Sinusoidal absolute embeddings: the encoding itself, or added next to one acting in the
/// attention (add_sinusoidal).
bool uses_sinusoidal_embedding(const ModelOptions& o) {
  return std::holds_alternative<nn::SinusoidalPosition>(o.position) ||
         (o.add_sinusoidal && !nn::is_absolute(o.position) &&
          !std::holds_alternative<nn::NoPosition>(o.position));
}

}  // namespace

Encoder::Encoder(const ModelOptions& o, bool causal, Generator& init_gen,
                 std::shared_ptr<Generator> dropout_gen)
    : options_(o), dropout_gen_(dropout_gen) {
  ROTA_CHECK(o.vocab_size > 0, "model: vocab_size must be positive, got {}", o.vocab_size);
  embed_ =
      register_module("embed", std::make_shared<nn::Embedding>(
                                   nn::EmbeddingOptions{o.vocab_size, o.dim, std::nullopt,
                                                        parameter_inits(o).embedding_std, o.dtype},
                                   init_gen));
  if (uses_sinusoidal_embedding(o)) {
    const auto* own = std::get_if<nn::SinusoidalPosition>(&o.position);
    sinusoidal_ = std::make_shared<nn::SinusoidalPositionEmbedding>(
        o.dim, o.dtype, own ? own->base : nn::SinusoidalPosition{}.base);
  } else if (const auto* learned = std::get_if<nn::LearnedPosition>(&o.position)) {
    learned_ = register_module("pos_embed", std::make_shared<nn::LearnedPositionEmbedding>(
                                                learned->max_positions, o.dim, init_gen,
                                                parameter_inits(o).embedding_std, o.dtype));
  }
  dropout_ = register_module("dropout", std::make_shared<nn::Dropout>(o.dropout, dropout_gen));
  blocks_ = register_module("blocks", std::make_shared<nn::ModuleList<TransformerBlock>>());
  ROTA_CHECK(!o.hybrid || !std::holds_alternative<nn::T5Position>(o.position),
             "model: T5's one bias table per stack cannot be used in a hybrid stack");
  SharedAttentionEncoding shared;
  if (is_softmax(o) && !o.hybrid && std::holds_alternative<nn::T5Position>(o.position)) {
    // T5's bias table, one per stack (encodings.md section 6), built as a block's layer would.
    ROTA_CHECK(o.heads > 0 && o.dim > 0 && o.dim % o.heads == 0,
               "model: width {} must be a positive multiple of heads {}", o.dim, o.heads);
    shared.encoding =
        nn::softmax_position_modules(softmax_attention_options(o, causal), init_gen).relative;
  }
  for (int64_t i = 0; i < o.layers; ++i) {
    shared.owner = i == 0;  // the first block registers the shared table, the others borrow it
    // The block's own attention (a hybrid's blocks differ) and decay depth.
    blocks_->push_back(std::make_shared<TransformerBlock>(block_options(o, i), causal, init_gen,
                                                          dropout_gen, shared));
  }
  if (o.final_norm && o.norm_placement == NormPlacement::kPre) {
    final_norm_ = register_module(
        "final_norm",
        nn::make_norm(o.norm_kind, {o.dim, o.norm_eps, true, o.dtype, o.norm_bias()}));
  }
}

Tensor Encoder::document_positions(const Tensor& segment_ids, int64_t offset) {
  return document_positions(segment_ids, std::vector<int64_t>(segment_ids.size(0), offset));
}

Tensor Encoder::document_positions(const Tensor& segment_ids,
                                   const std::vector<int64_t>& first_positions) {
  const Tensor ids = segment_ids.to(DType::kI64).contiguous();
  const int64_t rows = ids.size(0), n = ids.size(1);
  ROTA_CHECK(static_cast<int64_t>(first_positions.size()) == rows,
             "model: {} first-document positions for {} rows", first_positions.size(), rows);
  Tensor positions = Tensor::empty({rows, n}, DType::kI64);
  const int64_t* doc = ids.data<int64_t>();
  int64_t* out = positions.data<int64_t>();
  for (int64_t b = 0; b < rows; ++b) {
    int64_t start = -first_positions[b];  // the first document continues from its position
    for (int64_t t = 0; t < n; ++t) {
      if (t > 0 && doc[b * n + t] != doc[b * n + t - 1]) start = t;
      out[b * n + t] = t - start;
    }
  }
  return positions;
}

Variable Encoder::embed(const Tensor& ids, int64_t offset, const Tensor& segment_ids,
                        const Tensor& given_positions) const {
  Variable x = embed_->forward(ids);
  if (options_.scale_embeddings) x = x * std::sqrt(static_cast<double>(options_.dim));
  const int64_t n = ids.size(-1);
  if ((segment_ids.defined() || given_positions.defined()) && (sinusoidal_ || learned_)) {
    const Tensor& shaped = given_positions.defined() ? given_positions : segment_ids;
    ROTA_CHECK(shaped.shape() == ids.shape(), "model: positions or segment ids {} for ids {}",
               shape_str(shaped.shape()), shape_str(ids.shape()));
    const Tensor positions =
        given_positions.defined() ? given_positions : document_positions(segment_ids, offset);
    if (sinusoidal_) x = x + sinusoidal_->at(positions);
    if (learned_) x = x + learned_->at(positions);
    return x;
  }
  if (sinusoidal_) x = x + sinusoidal_->forward(n, offset);
  if (learned_) x = x + learned_->forward(n, offset);
  return x;
}

Variable Encoder::forward(const Tensor& ids, const Tensor& key_mask,
                          const Tensor& segment_ids) const {
  ROTA_CHECK(ids.dim() == 2, "model: ids {} must be [B, N]", shape_str(ids.shape()));
  Variable x = dropout_->forward(embed(ids, 0, segment_ids));
  const bool recompute = options_.recompute_blocks && is_training() && grad_enabled();
  for (const auto& block : *blocks_) {
    if (!recompute) {
      x = block->forward(x, key_mask, segment_ids);
      continue;
    }
    // The backward's second run holds the block (and the dropout stream) as long as the graph.
    const std::shared_ptr<TransformerBlock> b = block;
    x = recomputed(
        "recompute_block",
        [b, key_mask, segment_ids](const Variable& in) {
          return b->forward(in, key_mask, segment_ids);
        },
        x, block->parameters(), dropout_gen_);
  }
  return final_norm_ ? final_norm_->forward(x) : x;
}

Variable Encoder::forward_recording(const Tensor& ids,
                                    std::vector<TransformerBlock::AttentionIO>& io,
                                    const Tensor& key_mask) const {
  ROTA_CHECK(ids.dim() == 2, "model: ids {} must be [B, N]", shape_str(ids.shape()));
  io.assign(blocks_->size(), {});
  Variable x = dropout_->forward(embed(ids, 0, Tensor()));
  for (size_t i = 0; i < blocks_->size(); ++i) {
    x = (*blocks_)[i]->forward_recording(x, io[i], key_mask);
  }
  return final_norm_ ? final_norm_->forward(x) : x;
}

bool Encoder::supports_segments() const {
  if (options_.kind != ModelKind::kCausalLm) return false;
  for (const auto& block : *blocks_) {
    if (block->is_softmax() || !block->attention().carries_state()) return false;
  }
  return true;
}

Encoder::Segment Encoder::forward_segment(const Tensor& ids, int64_t offset,
                                          const std::vector<Variable>& states,
                                          const Tensor& segment_ids,
                                          const Tensor& positions) const {
  ROTA_CHECK(supports_segments(),
             "model: running a sequence in segments needs a causal LM whose blocks are all linear "
             "attention");
  ROTA_CHECK(ids.dim() == 2, "model: ids {} must be [B, N]", shape_str(ids.shape()));
  ROTA_CHECK(states.empty() || static_cast<int64_t>(states.size()) == num_blocks(),
             "model: {} segment states for {} blocks", states.size(), num_blocks());
  Segment out;
  Variable x = dropout_->forward(embed(ids, offset, segment_ids, positions));
  for (int64_t i = 0; i < num_blocks(); ++i) {
    nn::LinearAttention::Segment s =
        block(i).forward_segment(x, offset, states.empty() ? Variable() : states[i], segment_ids);
    x = s.output;
    out.states.push_back(s.state);
  }
  out.hidden = final_norm_ ? final_norm_->forward(x) : x;
  return out;
}

bool Encoder::supports_step() const {
  if (!options_.hybrid) return !is_softmax(options_);
  return options_.kind == ModelKind::kCausalLm;
}

EncoderState Encoder::initial_state(int64_t batch) const {
  EncoderState state;
  if (!supports_step()) return state;
  for (const auto& block : *blocks_) {
    state.layers.push_back(block->is_softmax() ? nn::LinearAttentionState{}
                                               : block->attention().initial_state(batch));
    state.caches.emplace_back();
  }
  return state;
}

Tensor Encoder::step(const Tensor& ids, EncoderState& state) const {
  ROTA_CHECK(supports_step(),
             "model: step() needs linear attention (a recurrent state) or a causal hybrid stack; "
             "this model uses softmax attention, so generate with full forward passes (check "
             "supports_step())");
  ROTA_CHECK(ids.dim() == 1, "model: step ids {} must be [B]", shape_str(ids.shape()));
  NoGradGuard no_grad;
  Tensor x = embed(ids.reshape({ids.size(0), 1}), state.position, Tensor())
                 .data()
                 .reshape({ids.size(0), options_.dim});
  ROTA_CHECK(state.layers.size() == blocks_->size() && state.caches.size() == blocks_->size(),
             "model: step state has {} entries for {} blocks (use initial_state())",
             state.layers.size(), blocks_->size());
  for (size_t i = 0; i < blocks_->size(); ++i) {
    const TransformerBlock& block = *(*blocks_)[i];
    x = block.is_softmax() ? block.step(x, state.caches[i]) : block.step(x, state.layers[i]);
  }
  ++state.position;
  return final_norm_ ? final_norm_->forward(Variable(x)).data() : x;
}

}  // namespace rota::models
