// Causal LM, masked LM and classifier.
#include "models/language_models.h"

#include <algorithm>

#include "framework/autograd/grad_mode.h"
#include "framework/autograd/ops/elementwise.h"
#include "framework/autograd/ops/linear_cross_entropy.h"
#include "framework/autograd/ops/loss.h"
#include "framework/autograd/ops/matmul.h"
#include "framework/autograd/ops/reduce.h"
#include "framework/autograd/ops/shape.h"
#include "framework/autograd/recompute.h"

namespace rota::models {

CausalLm::CausalLm(const ModelOptions& o, Generator& init_gen,
                   std::shared_ptr<Generator> dropout_gen)
    : dropout_gen_(dropout_gen) {
  encoder_ = register_module("encoder", std::make_shared<Encoder>(o, true, init_gen, dropout_gen));
  if (!o.tie_embeddings) {
    lm_head_ = register_module("lm_head", std::make_shared<nn::Linear>(
                                              nn::LinearOptions{o.dim, o.vocab_size, false, o.dtype,
                                                                parameter_inits(o).lm_head},
                                              init_gen));
  }
}

Variable CausalLm::project(const Variable& hidden) const {
  if (lm_head_) return lm_head_->forward(hidden);
  return matmul(hidden, encoder_->embedding().weight(), false, true);
}

Variable CausalLm::forward(const Tensor& ids, const Tensor& segment_ids) const {
  return project(encoder_->forward(ids, Tensor(), segment_ids));
}

Variable CausalLm::loss(const Tensor& ids, const Tensor& targets, const Tensor& segment_ids) const {
  const int64_t segment = encoder_->options().segment_length;
  if (segment > 0 && ids.dim() == 2 && ids.size(1) > segment) {
    return segmented_loss(ids, targets, segment, segment_ids);
  }
  // Fused projection + cross-entropy: the [B, N, V] logits of forward() are never formed.
  const Variable hidden = encoder_->forward(ids, Tensor(), segment_ids);
  if (lm_head_) return linear_cross_entropy(hidden, lm_head_->weight(), lm_head_->bias(), targets);
  return linear_cross_entropy(hidden, encoder_->embedding().weight(), Variable(), targets);
}

namespace {

int64_t target_count(const Tensor& targets) {
  int64_t count = 0;  // targets that count (not ignore_index −100)
  for (double t : targets.to_double_vector()) count += t != -100.0 ? 1 : 0;
  return count;
}

void check_ids_and_targets(const Tensor& ids, const Tensor& targets, const char* what) {
  ROTA_CHECK(ids.dim() == 2 && targets.shape() == ids.shape(),
             "{}: ids {} and targets {} must both be [B, N]", what, shape_str(ids.shape()),
             shape_str(targets.shape()));
}

// Packed documents continuing a carried state: the absolute encodings' positions [B, N] i64
// (each row's first document from carried.document_positions, zeros at the start of a
// stream), and carried.states with the rows whose first document is new set to zero (copies:
// the caller's tensors are not written).
Tensor continue_documents(const Tensor& segment_ids, CausalLm::CarriedState& carried,
                          const char* who) {
  const int64_t rows = segment_ids.size(0);
  std::vector<int64_t> first = carried.document_positions;
  if (first.empty()) first.assign(static_cast<size_t>(rows), 0);
  ROTA_CHECK(static_cast<int64_t>(first.size()) == rows,
             "{}: {} carried document positions for {} rows", who, first.size(), rows);
  for (size_t b = 0; b < first.size(); ++b) {
    ROTA_CHECK(first[b] >= 0, "{}: row {} has document position {}", who, b, first[b]);
    ROTA_CHECK(first[b] == 0 || !carried.states.empty(),
               "{}: row {} continues a document (position {}) but no state is carried", who, b,
               first[b]);
  }
  for (Tensor& state : carried.states) {
    Tensor copy;
    for (size_t b = 0; b < first.size(); ++b) {
      if (first[b] != 0) continue;
      if (!copy.defined()) {
        copy = Tensor::empty(state.shape(), state.dtype());
        copy.copy_from(state);
      }
      copy.narrow(0, static_cast<int64_t>(b), 1).fill(0.0);
    }
    if (copy.defined()) state = copy;
  }
  return Encoder::document_positions(segment_ids, first);
}

// The states a segment starting at column `start` of a packed window continues from: in a row
// whose document changes right at `start`, the state of the previous segment's last document
// belongs to another document, so that row's state is multiplied by 0 (its gradient too).
// segment_ids [B, N] (undefined: states as they are).
std::vector<Variable> states_into_segment(std::vector<Variable> states, const Tensor& segment_ids,
                                          int64_t start) {
  if (!segment_ids.defined() || start == 0) return states;
  const Tensor ids = segment_ids.to(DType::kI64).contiguous();
  const int64_t rows = ids.size(0), n = ids.size(1);
  const int64_t* doc = ids.data<int64_t>();
  std::vector<double> keep(static_cast<size_t>(rows), 1.0);
  bool any = false;
  for (int64_t b = 0; b < rows; ++b) {
    if (doc[b * n + start] != doc[b * n + start - 1]) {
      keep[static_cast<size_t>(b)] = 0.0;
      any = true;
    }
  }
  if (!any) return states;
  for (Variable& state : states) {
    if (!state.defined()) continue;
    Shape shape(static_cast<size_t>(state.data().dim()), 1);
    shape[0] = rows;
    state = state * Variable(tensor_from(keep, shape, state.data().dtype()));
  }
  return states;
}

}  // namespace

Variable CausalLm::summed_loss_from(const Tensor& ids, const Tensor& targets, int64_t offset,
                                    int64_t segment_length, std::vector<Variable> states,
                                    std::vector<Variable>& final_states, const Tensor& segment_ids,
                                    const Tensor& document_positions) const {
  ROTA_CHECK(encoder_->supports_segments(),
             "model: train.segment_length and train.carry_state need a causal LM whose blocks "
             "are all linear attention (softmax and hybrid stacks have no fixed-size state)");
  states.resize(static_cast<size_t>(encoder_->num_blocks()));  // undefined: zeros
  // What a segment's node holds on to: the modules (not this model object).
  const std::shared_ptr<Encoder> encoder = encoder_;
  const std::shared_ptr<nn::Linear> head = lm_head_;
  const int64_t n = ids.size(1);
  // Packed documents: each token's position in its document, for the absolute encodings.
  const Tensor positions = !segment_ids.defined() ? Tensor()
                           : document_positions.defined()
                               ? document_positions
                               : Encoder::document_positions(segment_ids, offset);
  // Columns [start, start + len) of x, or undefined.
  const auto columns = [](const Tensor& x, int64_t start, int64_t len) {
    return x.defined() ? x.narrow(1, start, len).contiguous() : Tensor();
  };
  // states in → {Σ of the token losses of [start, start + len), states out}
  const auto piece = [&, encoder, head, offset](int64_t start, int64_t len) {
    return [encoder, head, piece_ids = columns(ids, start, len),
            piece_targets = columns(targets, start, len),
            piece_documents = columns(segment_ids, start, len),
            piece_positions = columns(positions, start, len), window_documents = segment_ids, start,
            position = offset + start](const std::vector<Variable>& in) {
      Encoder::Segment s = encoder->forward_segment(
          piece_ids, position, states_into_segment(in, window_documents, start), piece_documents,
          piece_positions);
      const Variable weight = head ? head->weight() : encoder->embedding().weight();
      const Variable bias = head ? head->bias() : Variable();
      std::vector<Variable> out{
          linear_cross_entropy(s.hidden, weight, bias, piece_targets, -100, 0.0, Reduction::kSum)};
      out.insert(out.end(), s.states.begin(), s.states.end());
      return out;
    };
  };
  if (segment_length == 0) {  // one piece: no recomputation
    const std::vector<Variable> out = piece(0, n)(states);
    final_states.assign(out.begin() + 1, out.end());
    return out[0];
  }
  Variable total;
  for (int64_t start = 0; start < n; start += segment_length) {
    const int64_t len = std::min(segment_length, n - start);
    const std::vector<Variable> out =
        recomputed("segment", piece(start, len), states, parameters(), dropout_gen_);
    total = total.defined() ? total + out[0] : out[0];
    states.assign(out.begin() + 1, out.end());
  }
  final_states = std::move(states);
  return total;
}

Variable CausalLm::segmented_loss(const Tensor& ids, const Tensor& targets, int64_t segment_length,
                                  const Tensor& segment_ids) const {
  ROTA_CHECK(segment_length >= 1, "model: segment length must be >= 1, got {}", segment_length);
  check_ids_and_targets(ids, targets, "model");
  std::vector<Variable> final_states;
  const Variable total =
      summed_loss_from(ids, targets, 0, segment_length, {}, final_states, segment_ids, Tensor());
  return total / static_cast<double>(target_count(targets));
}

Variable CausalLm::continued_loss(const Tensor& ids, const Tensor& targets, CarriedState& carried,
                                  const Tensor& segment_ids) const {
  check_ids_and_targets(ids, targets, "continued_loss");
  const int64_t n = ids.size(1);
  const int64_t segment = encoder_->options().segment_length;
  ROTA_CHECK(carried.states.empty() ||
                 static_cast<int64_t>(carried.states.size()) == encoder_->num_blocks(),
             "continued_loss: {} carried states for {} blocks", carried.states.size(),
             encoder_->num_blocks());
  const Tensor positions =
      segment_ids.defined() ? continue_documents(segment_ids, carried, "continued_loss") : Tensor();
  std::vector<Variable> states;
  for (const Tensor& state : carried.states) states.emplace_back(state);
  std::vector<Variable> final_states;
  const Variable total =
      summed_loss_from(ids, targets, carried.position, segment > 0 && segment < n ? segment : 0,
                       std::move(states), final_states, segment_ids, positions);
  carried.position += n;
  carried.states.clear();
  for (const Variable& state : final_states) carried.states.push_back(state.data());
  return total / static_cast<double>(target_count(targets));
}

Tensor CausalLm::token_losses(const Tensor& ids, const Tensor& targets, int64_t rows_per_chunk,
                              CarriedState* carried, const Tensor& segment_ids) const {
  check_ids_and_targets(ids, targets, "token_losses");
  ROTA_CHECK(rows_per_chunk >= 1, "token_losses: rows_per_chunk must be >= 1, got {}",
             rows_per_chunk);
  NoGradGuard no_grad;
  const int64_t n = ids.size(1);
  const int64_t option_segment = encoder_->options().segment_length;
  Tensor hidden;  // [B, N, E]
  if (carried != nullptr ||
      (option_segment > 0 && n > option_segment && encoder_->supports_segments())) {
    ROTA_CHECK(encoder_->supports_segments(),
               "token_losses: carrying the state needs a causal LM whose blocks are all linear "
               "attention");
    // Segment by segment with the states carried, as the loss does: a window longer than
    // memory holds one segment's activations (plus the [B, N, E] hidden states kept here).
    const int64_t segment = option_segment > 0 ? option_segment : std::max<int64_t>(n, 1);
    hidden = Tensor::empty({ids.size(0), n, encoder_->options().dim},
                           encoder_->embedding().weight().dtype());
    std::vector<Variable> states;
    const int64_t offset = carried ? carried->position : 0;
    const Tensor positions = !segment_ids.defined() ? Tensor()
                             : carried ? continue_documents(segment_ids, *carried, "token_losses")
                                       : Encoder::document_positions(segment_ids, offset);
    if (carried) {
      for (const Tensor& state : carried->states) states.emplace_back(state);
    }
    for (int64_t start = 0; start < n; start += segment) {
      const int64_t len = std::min(segment, n - start);
      Encoder::Segment s = encoder_->forward_segment(
          ids.narrow(1, start, len).contiguous(), offset + start,
          states_into_segment(std::move(states), segment_ids, start),
          segment_ids.defined() ? segment_ids.narrow(1, start, len).contiguous() : Tensor(),
          positions.defined() ? positions.narrow(1, start, len).contiguous() : Tensor());
      hidden.narrow(1, start, len).copy_from(s.hidden.data());
      states = std::move(s.states);
    }
    if (carried) {
      carried->position += n;
      carried->states.clear();
      for (const Variable& state : states) carried->states.push_back(state.data());
    }
  } else {
    hidden = encoder_->forward(ids, Tensor(), segment_ids).data();
  }
  const int64_t rows = ids.numel();
  const Tensor flat_hidden = hidden.reshape({rows, hidden.size(-1)});
  const Tensor flat_targets = targets.contiguous().reshape({rows});
  Tensor losses = Tensor::empty({rows}, hidden.dtype());
  for (int64_t r0 = 0; r0 < rows; r0 += rows_per_chunk) {
    const int64_t n = std::min(rows_per_chunk, rows - r0);
    const Variable logits = project(Variable(flat_hidden.narrow(0, r0, n)));  // [n, V]
    const Tensor chunk = cross_entropy(logits, flat_targets.narrow(0, r0, n), -100, 0.0,
                                       Reduction::kNone)
                             .data();  // [n]
    losses.narrow(0, r0, n).copy_from(chunk);
  }
  return losses.reshape(ids.shape());
}

Tensor CausalLm::step(const Tensor& ids, EncoderState& state) const {
  NoGradGuard no_grad;
  return project(Variable(encoder_->step(ids, state))).data();
}

MaskedLm::MaskedLm(const ModelOptions& o, Generator& init_gen,
                   std::shared_ptr<Generator> dropout_gen) {
  encoder_ = register_module("encoder", std::make_shared<Encoder>(o, false, init_gen, dropout_gen));
  mlm_norm_ = register_module("mlm_norm", std::make_shared<nn::LayerNorm>(
                                              nn::NormOptions{o.dim, o.norm_eps, true, o.dtype}));
  mlm_bias_ = register_parameter("mlm_bias", zeros({o.vocab_size}, o.dtype));
}

Variable MaskedLm::hidden(const Tensor& ids, const Tensor& key_mask,
                          const Tensor& segment_ids) const {
  return mlm_norm_->forward(encoder_->forward(ids, key_mask, segment_ids));
}

Variable MaskedLm::forward(const Tensor& ids, const Tensor& key_mask,
                           const Tensor& segment_ids) const {
  return matmul(hidden(ids, key_mask, segment_ids), encoder_->embedding().weight(), false, true) +
         mlm_bias_;
}

Variable MaskedLm::loss(const Tensor& ids, const Tensor& targets, const Tensor& key_mask,
                        const Tensor& segment_ids) const {
  // Fused projection + cross-entropy: only the masked (non-ignored) rows get logits.
  return linear_cross_entropy(hidden(ids, key_mask, segment_ids), encoder_->embedding().weight(),
                              mlm_bias_, targets);
}

Classifier::Classifier(const ModelOptions& o, Generator& init_gen,
                       std::shared_ptr<Generator> dropout_gen)
    : options_(o) {
  ROTA_CHECK(o.num_classes >= 2, "classifier: num_classes must be >= 2, got {}", o.num_classes);
  encoder_ = register_module("encoder", std::make_shared<Encoder>(o, false, init_gen, dropout_gen));
  dropout_ = register_module("dropout", std::make_shared<nn::Dropout>(o.dropout, dropout_gen));
  head_ = register_module("classifier", std::make_shared<nn::Linear>(
                                            nn::LinearOptions{o.dim, o.num_classes, true, o.dtype,
                                                              parameter_inits(o).classifier_head},
                                            init_gen));
}

Variable Classifier::forward(const Tensor& ids, const Tensor& key_mask) const {
  const Variable h = encoder_->forward(ids, key_mask);  // [B, N, E]
  Variable pooled;
  if (options_.pooling == Pooling::kFirstToken) {
    pooled = squeeze(narrow(h, 1, 0, 1), 1);
  } else {
    // Mean over real tokens: Σ_t m_t h_t / Σ_t m_t.
    const int64_t b = ids.size(0), n = ids.size(1);
    Tensor m = key_mask.defined() ? key_mask.to(h.dtype()) : ones({b, n}, h.dtype());
    const Variable mv(m.reshape({b, n, 1}));
    pooled = sum(h * mv, {1}) / sum(mv, {1});
  }
  return head_->forward(dropout_->forward(pooled));
}

Variable Classifier::loss(const Tensor& ids, const Tensor& key_mask, const Tensor& labels) const {
  return cross_entropy(forward(ids, key_mask), labels);
}

}  // namespace rota::models
