// The analytic memory estimate: exact parameter counts against built models, and its scaling.
#include "models/memory_estimate.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "models/language_models.h"

namespace rota::models {
namespace ROTA_TEST_FILE_NS {

struct Case {
  std::string name;
  ModelOptions options;
};

ModelOptions base(ModelKind kind) {
  ModelOptions o;
  o.kind = kind;
  o.vocab_size = 37;
  o.dim = 12;
  o.layers = 3;
  o.heads = 3;
  o.ffn_dim = 20;
  o.dropout = 0.0;
  o.num_classes = 5;
  return o;
}

std::vector<Case> cases() {
  std::vector<Case> all;
  for (ModelKind kind : {ModelKind::kCausalLm, ModelKind::kMaskedLm, ModelKind::kClassifier}) {
    const std::string k = kind == ModelKind::kCausalLm   ? "causal"
                          : kind == ModelKind::kMaskedLm ? "masked"
                                                         : "classifier";
    auto add = [&](const std::string& name, ModelOptions o) { all.push_back({k + "_" + name, o}); };
    ModelOptions o = base(kind);
    add("lrpe2_householder", o);
    o.position = nn::NoPosition{};
    o.attention.feature_map = nn::FeatureMap::kHedgehog;
    add("hedgehog", o);
    o = base(kind);
    for (backend::LrpeCore core : {backend::LrpeCore::kUnitary, backend::LrpeCore::kPermutation}) {
      for (backend::LrpeP p :
           {backend::LrpeP::kIdentity, backend::LrpeP::kHouseholder, backend::LrpeP::kOddEven}) {
        nn::LrpeOptions lrpe;
        lrpe.core = core;
        lrpe.p = p;
        o = base(kind);
        o.position = lrpe;
        add("lrpe_core" + std::to_string(static_cast<int>(core)) + "_p" +
                std::to_string(static_cast<int>(p)),
            o);
      }
    }
    o = base(kind);
    o.position = nn::RopePosition{};
    o.attention.norm = nn::LinearAttentionNorm::kRmsNorm;
    add("rope_rms", o);
    o = base(kind);
    o.position = nn::PermuteFormerPosition{};
    o.final_norm = false;
    add("permute_former_no_final_norm", o);
    o = base(kind);
    o.position = nn::LearnedPosition{40};
    o.norm_placement = NormPlacement::kPost;
    add("learned_post_norm", o);
    o = base(kind);
    o.position = nn::SinusoidalPosition{};
    o.tie_embeddings = false;
    add("sinusoidal_untied", o);
    o = base(kind);
    o.position = nn::NoPosition{};
    o.attention.norm = nn::LinearAttentionNorm::kDenominator;
    o.attention.feature_map = nn::FeatureMap::kRelu;
    add("denominator", o);
    o = base(kind);
    o.attention.norm = nn::LinearAttentionNorm::kGroupNorm;
    o.attention.output_gate = nn::OutputGate::kSwish;
    if (kind == ModelKind::kCausalLm) o.attention.decay.schedule = nn::DecaySchedule::kRetNet;
    add("group_norm_gate", o);
    if (kind == ModelKind::kCausalLm) {  // gating and the delta rule are causal-only
      nn::LrpeOptions type1;
      type1.core = backend::LrpeCore::kUnitary;
      o = base(kind);
      o.position = type1;
      o.attention.state_gate.gating = nn::StateGating::kGla;
      o.attention.state_gate.gla_rank = 5;
      add("gla_type1", o);
      o = base(kind);
      o.position = nn::NoPosition{};
      o.attention.feature_map = nn::FeatureMap::kHedgehog;
      o.attention.state_gate.gating = nn::StateGating::kGla;
      o.attention.state_gate.gla_rank = 5;
      add("hedgehog_gla", o);
      o = base(kind);
      o.attention.state_gate.gating = nn::StateGating::kSsd;
      o.attention.state_gate.rule = nn::UpdateRule::kDelta;
      add("gated_deltanet", o);
      o = base(kind);
      o.attention.state_gate.gating = nn::StateGating::kSsd;
      add("ssd", o);
      o = base(kind);
      o.attention.decay.schedule = nn::DecaySchedule::kTransNormer;
      o.attention.decay.learnable = true;
      add("learnable_decay", o);
      o = base(kind);  // no biases reach the output gate and the GroupNorm too
      o.bias = false;
      o.attention.norm = nn::LinearAttentionNorm::kGroupNorm;
      o.attention.output_gate = nn::OutputGate::kSigmoid;
      o.attention.state_gate.gating = nn::StateGating::kGla;
      add("no_bias_group_norm_gla", o);
    }
    // LLaMA-style blocks: RMSNorm, gated FFNs, no biases, and each option alone.
    for (nn::Activation act : {nn::Activation::kSwiglu, nn::Activation::kGeglu}) {
      for (bool bias : {true, false}) {
        o = base(kind);
        o.activation = act;
        o.bias = bias;
        o.norm_kind = bias ? nn::NormKind::kLayerNorm : nn::NormKind::kRmsNorm;
        add(std::string(act == nn::Activation::kSwiglu ? "swiglu" : "geglu") +
                (bias ? "_bias_layer_norm" : "_no_bias_rms_norm"),
            o);
      }
    }
    o = base(kind);
    o.bias = false;
    add("no_bias_layer_norm", o);  // LayerNorms without β, attention norm included
    o = base(kind);
    o.norm_kind = nn::NormKind::kRmsNorm;
    o.attention.norm = nn::LinearAttentionNorm::kRmsNorm;
    add("rms_norm_blocks", o);
    o = base(kind);
    o.attention_family = AttentionFamily::kSoftmax;
    o.position = nn::RopePosition{};
    o.activation = nn::Activation::kSwiglu;
    o.norm_kind = nn::NormKind::kRmsNorm;
    o.bias = false;
    add("softmax_llama", o);
    // Softmax attention with every table-carrying encoding.
    auto softmax = [&](const std::string& name, nn::PositionEncoding position) {
      ModelOptions s = base(kind);
      s.attention_family = AttentionFamily::kSoftmax;
      s.position = position;
      add("softmax_" + name, s);
    };
    softmax("rope", nn::RopePosition{});
    softmax("alibi", nn::AlibiPosition{});
    softmax("t5", nn::T5Position{8, 30, std::nullopt});
    nn::ShawPosition shaw;
    shaw.clip = 3;
    shaw.clip_left = 5;
    shaw.values = true;
    softmax("shaw_values", shaw);
    softmax("xl", nn::TransformerXlPosition{});
    nn::TransformerXlPosition xl;
    xl.pe_dim = 8;
    softmax("xl_pe8", xl);
    softmax("skew", nn::SkewPosition{9, false});
    softmax("skew_per_head", nn::SkewPosition{9, true});
    // Hybrid stacks: a softmax RoPE block in a linear stack, linear LRPE blocks (with a gate) in
    // a softmax ALiBi stack.
    o = base(kind);
    HybridOptions rope_block;
    rope_block.blocks = {1};
    rope_block.attention_family = AttentionFamily::kSoftmax;
    rope_block.position = nn::RopePosition{};
    o.hybrid = rope_block;
    add("hybrid_softmax_rope_block", o);
    o = base(kind);
    o.attention_family = AttentionFamily::kSoftmax;
    o.position = nn::AlibiPosition{};
    HybridOptions lrpe_blocks;
    lrpe_blocks.blocks = {0, 2};
    lrpe_blocks.attention_family = AttentionFamily::kLinear;
    lrpe_blocks.attention.output_gate = nn::OutputGate::kSwish;
    lrpe_blocks.position = nn::LrpeOptions{};
    o.hybrid = lrpe_blocks;
    add("hybrid_linear_lrpe_blocks", o);
  }
  return all;
}

double built_parameter_count(const ModelOptions& o) {
  Generator gen(1);
  std::shared_ptr<nn::Module> model;
  switch (o.kind) {
    case ModelKind::kCausalLm:
      model = std::make_shared<CausalLm>(o, gen, std::make_shared<Generator>(2));
      break;
    case ModelKind::kMaskedLm:
      model = std::make_shared<MaskedLm>(o, gen, std::make_shared<Generator>(2));
      break;
    case ModelKind::kClassifier:
      model = std::make_shared<Classifier>(o, gen, std::make_shared<Generator>(2));
      break;
  }
  double count = 0;
  for (const auto& [name, parameter] : model->named_parameters()) {
    count += static_cast<double>(parameter.data().numel());
  }
  return count;
}

TEST(MemoryEstimate, ParameterCountIsExactForEveryKindAndEncoding) {
  for (const Case& c : cases()) {
    EXPECT_EQ(parameter_count(c.options), built_parameter_count(c.options)) << c.name;
  }
}

TEST(MemoryEstimate, GatedFfnKeepsOneMoreHiddenWidthPerTokenAndLayer) {
  const ModelOptions plain = base(ModelKind::kCausalLm);
  ModelOptions gated = plain;
  gated.activation = nn::Activation::kSwiglu;
  // [gate | up] (2F floats per token) where the plain FFN keeps its pre-activation (F).
  const double per_layer_token = static_cast<double>(plain.ffn_dim) * 4.0;  // f32 bytes
  const double tokens = 4.0 * 64.0;
  EXPECT_DOUBLE_EQ(training_memory(gated, 4, 64).activation_bytes -
                       training_memory(plain, 4, 64).activation_bytes,
                   tokens * static_cast<double>(plain.layers) * per_layer_token);
  EXPECT_DOUBLE_EQ(inference_memory(gated, 4, 64).activation_bytes -
                       inference_memory(plain, 4, 64).activation_bytes,
                   tokens * per_layer_token);
}

TEST(MemoryEstimate, TrainingAddsStateAndActivationsThatScaleWithTokensAndLayers) {
  const ModelOptions o = base(ModelKind::kCausalLm);
  const MemoryEstimate one = training_memory(o, 4, 64);
  EXPECT_DOUBLE_EQ(one.parameter_bytes, 4.0 * one.parameters);
  EXPECT_DOUBLE_EQ(one.state_bytes, 12.0 * one.parameters);  // gradient + two AdamW moments
  EXPECT_DOUBLE_EQ(training_memory(o, 8, 64).activation_bytes, 2.0 * one.activation_bytes);
  ModelOptions deeper = o;
  deeper.layers = 6;
  EXPECT_GT(training_memory(deeper, 4, 64).activation_bytes, 1.9 * one.activation_bytes);
  ModelOptions bf16 = o;
  bf16.dtype = DType::kBF16;
  EXPECT_DOUBLE_EQ(training_memory(bf16, 4, 64).state_bytes, 14.0 * one.parameters);
  // Inference keeps no state and far fewer activations than training.
  const MemoryEstimate inference = inference_memory(o, 4, 64);
  EXPECT_EQ(inference.state_bytes, 0.0);
  EXPECT_LT(inference.activation_bytes, one.activation_bytes / 2);
  // Softmax attention's scores grow with the sequence: per token, linearly in N.
  ModelOptions softmax = o;
  softmax.attention_family = AttentionFamily::kSoftmax;
  softmax.position = nn::NoPosition{};
  const double short_per_token = training_memory(softmax, 1, 64).activation_bytes / 64;
  const double long_per_token = training_memory(softmax, 1, 1024).activation_bytes / 1024;
  EXPECT_GT(long_per_token, 2.0 * short_per_token);
  // A sliding window W stops the scores growing with N: per token the same at N = W and 16·W.
  ModelOptions windowed = softmax;
  windowed.softmax.window = 64;
  EXPECT_DOUBLE_EQ(training_memory(windowed, 1, 1024).activation_bytes / 1024, short_per_token);
  // A hybrid stack's activations are the sum of its blocks': one softmax block of three.
  ModelOptions hybrid = o;
  HybridOptions h;
  h.blocks = {1};
  h.attention_family = AttentionFamily::kSoftmax;
  h.position = nn::NoPosition{};
  hybrid.hybrid = h;
  ModelOptions linear_nope = o;
  linear_nope.position = nn::NoPosition{};
  hybrid.position = nn::NoPosition{};
  const double expected = (2.0 * training_memory(linear_nope, 4, 64).activation_bytes +
                           training_memory(softmax, 4, 64).activation_bytes) /
                          3.0;
  EXPECT_NEAR(training_memory(hybrid, 4, 64).activation_bytes, expected, 1e-9 * expected);
}

// Block recomputation keeps every block's input (E f32 per token and block) and one block's
// saved tensors: a 6-block model costs its inputs plus what a 1-block model saves.
TEST(MemoryEstimate, OnlyTrainedParametersKeepGradientsAndMoments) {
  const ModelOptions o = base(ModelKind::kCausalLm);
  const MemoryEstimate full = training_memory(o, 4, 64);
  // Adapters of 1,000 parameters, 3,000 parameters training in all.
  const MemoryEstimate adapted = with_trainable_parameters(full, 3000, 1000, DType::kF32);
  EXPECT_DOUBLE_EQ(adapted.parameters, full.parameters + 1000);
  EXPECT_DOUBLE_EQ(adapted.parameter_bytes, 4.0 * (full.parameters + 1000));
  EXPECT_DOUBLE_EQ(adapted.state_bytes, 12.0 * 3000);
  EXPECT_DOUBLE_EQ(adapted.activation_bytes, full.activation_bytes);
  // bf16 copies of every weight stay, frozen or not.
  EXPECT_DOUBLE_EQ(with_trainable_parameters(full, 3000, 1000, DType::kBF16).state_bytes,
                   12.0 * 3000 + 2.0 * (full.parameters + 1000));
  // Everything training and nothing added: the plain estimate.
  EXPECT_DOUBLE_EQ(with_trainable_parameters(full, full.parameters, 0, DType::kF32).state_bytes,
                   full.state_bytes);
}

TEST(MemoryEstimate, RecomputedBlocksKeepTheirInputsAndOneBlock) {
  ModelOptions one = base(ModelKind::kCausalLm);
  one.layers = 1;
  ModelOptions deep = one;
  deep.layers = 6;
  deep.recompute_blocks = true;
  const double tokens = 4.0 * 64.0;
  const double inputs = tokens * 4.0 * static_cast<double>(deep.dim) * 6.0;
  EXPECT_DOUBLE_EQ(training_memory(deep, 4, 64).activation_bytes,
                   inputs + training_memory(one, 4, 64).activation_bytes);
  ModelOptions plain_deep = deep;
  plain_deep.recompute_blocks = false;
  EXPECT_LT(training_memory(deep, 4, 64).activation_bytes,
            0.5 * training_memory(plain_deep, 4, 64).activation_bytes);
  // Parameters, optimizer state and inference are not affected.
  EXPECT_EQ(training_memory(deep, 4, 64).state_bytes,
            training_memory(plain_deep, 4, 64).state_bytes);
  EXPECT_EQ(inference_memory(deep, 4, 64).activation_bytes,
            inference_memory(plain_deep, 4, 64).activation_bytes);
}

// Segments: one segment's activations (the formula at the segment length) plus every block's f32
// state [H, F, D] at each of the ⌈N / S⌉ + 1 boundaries, for each sequence; a sequence no longer
// than a segment is estimated whole.
TEST(MemoryEstimate, SegmentsHoldOneSegmentAndTheBoundaryStates) {
  ModelOptions o = base(ModelKind::kCausalLm);
  o.layers = 4;
  ModelOptions segmented = o;
  segmented.segment_length = 256;
  const double d = static_cast<double>(o.dim / o.heads);
  const double state = 4.0 * static_cast<double>(o.heads) * d * d;  // f32 [H, D, D] (LRPE type 2)
  const double boundaries = 1048576.0 / 256.0 + 1.0;
  EXPECT_DOUBLE_EQ(training_memory(segmented, 2, 1048576).activation_bytes,
                   training_memory(o, 2, 256).activation_bytes + boundaries * 2.0 * 4.0 * state);
  EXPECT_DOUBLE_EQ(training_memory(segmented, 2, 256).activation_bytes,
                   training_memory(o, 2, 256).activation_bytes);
  EXPECT_EQ(training_memory(segmented, 2, 4096).state_bytes,
            training_memory(o, 2, 4096).state_bytes);
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::models
