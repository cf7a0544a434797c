// Small models of every linear-attention encoding that carries a state (and softmax ones), for
// the model tests that compare one way of running a model with another.
#pragma once

#include <string>
#include <vector>

#include "models/model_options.h"

namespace rota::models::testing {

struct Variant {
  std::string name;
  ModelOptions options;
};

inline ModelOptions base(DType dtype) {
  ModelOptions o;
  o.vocab_size = 17;
  o.dim = 16;
  o.layers = 2;
  o.heads = 2;
  o.ffn_dim = 24;
  o.dropout = 0.0;
  o.init_scheme = models::InitScheme::kNormal;  // N(0, init_std²), not the default
  o.init_std = 0.3;
  o.dtype = dtype;
  o.attention.chunk_size = 4;  // segments of 5 cut chunks in the middle
  return o;
}

// Every linear-attention encoding whose layers carry a state, and the block variants around it.
inline std::vector<Variant> variants(DType dtype) {
  std::vector<Variant> out;
  for (auto core : {backend::LrpeCore::kUnitary, backend::LrpeCore::kOrthogonal,
                    backend::LrpeCore::kPermutation}) {
    ModelOptions o = base(dtype);
    nn::LrpeOptions lrpe;
    lrpe.core = core;
    o.position = lrpe;
    out.push_back({"LRPE type " + std::to_string(static_cast<int>(core) + 1), o});
  }
  ModelOptions rope = base(dtype);
  rope.position = nn::RopePosition{};
  out.push_back({"RoPE", rope});
  ModelOptions permute = base(dtype);
  permute.position = nn::PermuteFormerPosition{};
  out.push_back({"PermuteFormer", permute});
  ModelOptions nope = base(dtype);
  nope.position = nn::NoPosition{};
  out.push_back({"NoPE", nope});
  ModelOptions sinusoidal = base(dtype);
  sinusoidal.position = nn::SinusoidalPosition{};
  out.push_back({"sinusoidal absolute", sinusoidal});
  ModelOptions retnet = base(dtype);  // LRPE with RetNet's fixed decay
  retnet.attention.decay.schedule = nn::DecaySchedule::kRetNet;
  out.push_back({"LRPE-d (RetNet decay)", retnet});
  ModelOptions denominator = base(dtype);
  denominator.position = nn::NoPosition{};
  denominator.attention.norm = nn::LinearAttentionNorm::kDenominator;
  out.push_back({"denominator", denominator});
  ModelOptions gla = base(dtype);
  gla.position = nn::NoPosition{};
  gla.attention.state_gate.gating = nn::StateGating::kGla;
  gla.attention.state_gate.gla_rank = 4;
  out.push_back({"GLA", gla});
  ModelOptions ssd = base(dtype);
  ssd.position = nn::NoPosition{};
  ssd.attention.state_gate.gating = nn::StateGating::kSsd;
  out.push_back({"SSD", ssd});
  ModelOptions learnable = base(dtype);  // LRPE-d with learnable rates: the gated kernel
  learnable.attention.decay.schedule = nn::DecaySchedule::kTransNormer;
  learnable.attention.decay.learnable = true;
  out.push_back({"LRPE-d, learnable", learnable});
  ModelOptions deltanet = base(dtype);
  deltanet.position = nn::NoPosition{};
  deltanet.attention.state_gate.rule = nn::UpdateRule::kDelta;
  out.push_back({"DeltaNet", deltanet});
  ModelOptions gated_delta = deltanet;
  gated_delta.attention.state_gate.gating = nn::StateGating::kSsd;
  out.push_back({"Gated DeltaNet", gated_delta});
  ModelOptions hedgehog = base(dtype);
  hedgehog.position = nn::NoPosition{};
  hedgehog.attention.feature_map = nn::FeatureMap::kHedgehog;
  out.push_back({"Hedgehog feature map", hedgehog});
  ModelOptions hedgehog_gla = hedgehog;
  hedgehog_gla.attention.state_gate.gating = nn::StateGating::kGla;
  hedgehog_gla.attention.state_gate.gla_rank = 4;
  out.push_back({"Hedgehog feature map, GLA", hedgehog_gla});
  ModelOptions post = base(dtype);
  post.norm_placement = models::NormPlacement::kPost;
  post.tie_embeddings = false;
  out.push_back({"post-norm, untied head", post});
  return out;
}

// Softmax attention with each of its positional encodings (absolute, rotary, bias and
// relative-key families).
inline std::vector<Variant> softmax_variants(DType dtype) {
  std::vector<Variant> out;
  const auto add = [&](const std::string& name, nn::PositionEncoding position) {
    ModelOptions o = base(dtype);
    o.attention_family = AttentionFamily::kSoftmax;
    o.position = position;
    out.push_back({"softmax, " + name, o});
  };
  add("NoPE", nn::NoPosition{});
  add("sinusoidal", nn::SinusoidalPosition{});
  add("learned absolute", nn::LearnedPosition{64});
  add("RoPE", nn::RopePosition{});
  add("ALiBi", nn::AlibiPosition{});
  add("T5", nn::T5Position{});
  nn::ShawPosition shaw;
  shaw.clip = 4;
  shaw.values = true;
  add("Shaw with values", shaw);
  add("Transformer-XL", nn::TransformerXlPosition{});
  nn::SkewPosition skew;
  skew.max_len = 32;
  add("skew", skew);
  return out;
}

}  // namespace rota::models::testing
