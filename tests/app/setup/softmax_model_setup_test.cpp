// Softmax-attention models from recipes: every encoding, causality, padding, T5 sharing, streaming.
#include <algorithm>
#include <cmath>
#include <memory>
#include <ostream>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include <gtest/gtest.h>

#include "app/setup/model_setup.h"
#include "framework/nn/attention/streaming_chunk_attention.h"
#include "framework/nn/position/shaw.h"
#include "framework/nn/position/t5_bias.h"
#include "models/language_models.h"
#include "recipes/loader.h"
#include "tests/support/allclose.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

using models::ModelOptions;
using testing::allclose;

constexpr int64_t kVocab = 13;
constexpr int64_t kWidth = 16;

/// A small valid recipe with softmax attention; `softmax` goes inside `softmax { }`, `position`
/// inside `position { }`.
std::string softmax_recipe(const std::string& position, const std::string& softmax = "") {
  return R"(version: 1
model {
  kind: CAUSAL_LM
  width: 16
  layers: 2
  heads: 2
  ffn_width: 24
  dropout: 0
  init_scheme: NORMAL
  init_std: 0.3
  attention { softmax { )" +
         softmax + R"( } }
  position { )" +
         position + R"( }
}
data {
  corpus: "tinyshakespeare"
  tokenizer { kind: CHAR }
  sequence_length: 12
  batch_size: 2
}
train { steps: 1 }
)";
}

recipes::Recipe load(const std::string& text, const std::vector<std::string>& overrides = {}) {
  return recipes::load_recipe_text(text, "softmax_models_test.txtpb", overrides);
}

/// ModelOptions of a recipe, in double precision so that "does not depend on" can be tested
/// to rounding level.
ModelOptions options_of(const std::string& text, const std::vector<std::string>& overrides = {}) {
  ModelOptions o = app::model_options_from_recipe(load(text, overrides), kVocab);
  o.dtype = DType::kF64;
  return o;
}

ModelOptions masked_lm_options(const std::string& text,
                               const std::vector<std::string>& overrides = {}) {
  std::vector<std::string> all = {"model.kind=MASKED_LM"};
  all.insert(all.end(), overrides.begin(), overrides.end());
  return options_of(text, all);
}

struct Encoding {
  std::string name;      // test name
  std::string position;  // the recipe's position { ... } body
};

const std::vector<Encoding>& softmax_encodings() {
  static const std::vector<Encoding> kEncodings = {
      {"none", "none {}"},
      {"sinusoidal", "sinusoidal {}"},
      {"learned", "learned_absolute { max_positions: 16 }"},
      {"rope", "rope {}"},
      {"rope_half_abs", "rope { pairing: HALF base: 500 } add_sinusoidal: true"},
      {"shaw_values", "shaw { clip: 3 values: true }"},
      {"shaw_asymmetric", "shaw { clip_left: 4 clip_right: 2 }"},
      {"transformer_xl", "transformer_xl {}"},
      {"transformer_xl_concat", "transformer_xl { layout: CONCATENATED pe_width: 8 base: 500 }"},
      {"skew", "skew { max_len: 16 }"},
      {"skew_per_head", "skew { max_len: 16 per_head: true }"},
      {"t5", "t5 { buckets: 8 max_distance: 16 }"},
      {"alibi", "alibi {}"},
  };
  return kEncodings;
}

/// The encodings that give a bidirectional model word order (NoPE cannot: it is a bag-of-words
/// baseline there, accepted with a warning and tested in tests/recipes/validate_test.cpp).
std::vector<Encoding> bidirectional_encodings() {
  std::vector<Encoding> out;
  for (const Encoding& e : softmax_encodings()) {
    if (e.name != "none") out.push_back(e);
  }
  return out;
}

void PrintTo(const Encoding& encoding, std::ostream* out) {
  *out << encoding.name;
}

std::string encoding_test_name(const ::testing::TestParamInfo<Encoding>& info) {
  return info.param.name;
}

Tensor random_ids(int64_t b, int64_t n, Generator& gen) {
  return randint({b, n}, gen, 0, kVocab);
}

/// Another id at (row, position).
void change_token(Tensor& ids, int64_t row, int64_t position) {
  const double old = ids.at({row, position});
  ids.set({row, position}, std::fmod(old + 1.0, static_cast<double>(kVocab)));
}

/// Every trainable parameter has a finite gradient that is not all zero.
void expect_gradients_everywhere(const nn::Module& model) {
  int64_t trainable = 0;
  for (const auto& [name, p] : model.named_parameters()) {
    if (!p.requires_grad()) continue;
    ++trainable;
    ASSERT_TRUE(p.grad().defined()) << name;
    const std::vector<double> g = p.grad().to_double_vector();
    EXPECT_TRUE(std::all_of(g.begin(), g.end(), [](double x) { return std::isfinite(x); })) << name;
    EXPECT_TRUE(std::any_of(g.begin(), g.end(), [](double x) { return x != 0.0; })) << name;
  }
  EXPECT_GT(trainable, 0);
}

// ---------------------------------------------------------------------------------------------
// Causal LM, every encoding.

class SoftmaxCausalLm : public ::testing::TestWithParam<Encoding> {};

TEST_P(SoftmaxCausalLm, ShapesLossAndGradientsReachEveryParameter) {
  const ModelOptions o = options_of(softmax_recipe(GetParam().position));
  ASSERT_EQ(o.attention_family, models::AttentionFamily::kSoftmax);
  Generator gen(11);
  models::CausalLm model(o, gen, nullptr);
  for (int64_t i = 0; i < model.encoder().num_blocks(); ++i) {
    EXPECT_TRUE(model.encoder().block(i).is_softmax()) << i;
    EXPECT_TRUE(model.encoder().block(i).softmax_attention().options().causal) << i;
  }
  const Tensor ids = random_ids(2, 10, gen);
  EXPECT_EQ(model.forward(ids).shape(), (Shape{2, 10, kVocab}));
  const Variable loss = model.loss(ids, random_ids(2, 10, gen));
  ASSERT_TRUE(std::isfinite(loss.item()));
  EXPECT_GT(loss.item(), 0.0);
  loss.backward();
  expect_gradients_everywhere(model);
  // The layer's own parameter names under the block's `attn`.
  const StateDict state = model.state_dict();
  EXPECT_TRUE(state.contains("encoder.blocks.1.attn.q_proj.weight"));
  EXPECT_TRUE(state.contains("encoder.blocks.1.attn.out_proj.bias"));
}

TEST_P(SoftmaxCausalLm, LogitsDoNotDependOnLaterTokens) {
  Generator gen(12);
  models::CausalLm model(options_of(softmax_recipe(GetParam().position)), gen, nullptr);
  model.eval();
  const int64_t n = 10;
  const Tensor ids = random_ids(2, n, gen);
  const Tensor before = model.forward(ids).data();
  for (int64_t t : {0, 3, 7}) {
    Tensor changed = ids.clone();
    for (int64_t j = t + 1; j < n; ++j) change_token(changed, 1, j);
    const Tensor after = model.forward(changed).data();
    EXPECT_TRUE(allclose(after.slice(1, 0, t + 1), before.slice(1, 0, t + 1), 0, 1e-12))
        << GetParam().name << " t=" << t;
    // Row 0 was not changed at all; row 1 changes from t + 1 on (the check can fail).
    EXPECT_TRUE(allclose(after.slice(0, 0, 1), before.slice(0, 0, 1), 0, 1e-12));
    EXPECT_FALSE(allclose(after.slice(0, 1, 2).slice(1, t + 1, n),
                          before.slice(0, 1, 2).slice(1, t + 1, n), 0, 1e-6))
        << GetParam().name << " t=" << t;
  }
}

INSTANTIATE_TEST_SUITE_P(Encodings, SoftmaxCausalLm, ::testing::ValuesIn(softmax_encodings()),
                         encoding_test_name);

// ---------------------------------------------------------------------------------------------
// Masked LM, every encoding a bidirectional model accepts.

class SoftmaxMaskedLm : public ::testing::TestWithParam<Encoding> {};

TEST_P(SoftmaxMaskedLm, ShapesLossAndGradientsReachEveryParameter) {
  const ModelOptions o = masked_lm_options(softmax_recipe(GetParam().position));
  ASSERT_EQ(o.kind, models::ModelKind::kMaskedLm);
  Generator gen(13);
  models::MaskedLm model(o, gen, nullptr);
  const Tensor ids = random_ids(2, 8, gen);
  const Tensor mask = tensor_from({1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0}, {2, 8});
  EXPECT_EQ(model.forward(ids, mask).shape(), (Shape{2, 8, kVocab}));
  Tensor targets = random_ids(2, 8, gen);
  targets.set({1, 6}, -100);
  targets.set({1, 7}, -100);
  const Variable loss = model.loss(ids, targets, mask);
  ASSERT_TRUE(std::isfinite(loss.item()));
  EXPECT_GT(loss.item(), 0.0);
  loss.backward();
  expect_gradients_everywhere(model);
}

TEST_P(SoftmaxMaskedLm, PaddingIdsDoNotChangeRealPositions) {
  Generator gen(14);
  models::MaskedLm model(masked_lm_options(softmax_recipe(GetParam().position)), gen, nullptr);
  model.eval();
  Tensor ids = random_ids(1, 8, gen);
  const Tensor mask = tensor_from({1, 1, 1, 1, 1, 1, 0, 0}, {1, 8});
  const Tensor before = model.forward(ids, mask).data().slice(1, 0, 6);
  change_token(ids, 0, 6);
  change_token(ids, 0, 7);
  const Tensor after = model.forward(ids, mask).data().slice(1, 0, 6);
  EXPECT_TRUE(allclose(after, before, 0, 1e-12)) << GetParam().name;
  // A real token does reach the other real positions, earlier ones included (bidirectional).
  change_token(ids, 0, 5);
  const Tensor real_changed = model.forward(ids, mask).data().slice(1, 0, 5);
  EXPECT_FALSE(allclose(real_changed, before.slice(1, 0, 5), 0, 1e-6)) << GetParam().name;
}

INSTANTIATE_TEST_SUITE_P(Encodings, SoftmaxMaskedLm, ::testing::ValuesIn(bidirectional_encodings()),
                         encoding_test_name);

TEST(SoftmaxClassifier, PoolsOnlyRealTokens) {
  Generator gen(15);
  ModelOptions o = masked_lm_options(softmax_recipe("alibi {}"));
  o.kind = models::ModelKind::kClassifier;
  o.num_classes = 3;
  models::Classifier clf(o, gen, nullptr);
  clf.eval();
  Tensor ids = random_ids(1, 6, gen);
  const Tensor mask = tensor_from({1, 1, 1, 1, 0, 0}, {1, 6});
  const Tensor before = clf.forward(ids, mask).data();
  EXPECT_EQ(before.shape(), (Shape{1, 3}));
  change_token(ids, 0, 4);
  EXPECT_TRUE(allclose(clf.forward(ids, mask).data(), before, 0, 1e-12));
}

// ---------------------------------------------------------------------------------------------
// T5: one bias table for the stack.

TEST(SoftmaxT5, OneTableSharedByEveryLayer) {
  Generator gen(16);
  models::CausalLm model(
      options_of(softmax_recipe("t5 { buckets: 8 max_distance: 16 }"), {"model.layers=3"}), gen,
      nullptr);
  const std::string table_name = "encoder.blocks.0.attn.position.weight";
  int64_t in_state = 0, in_parameters = 0;
  for (const auto& [name, t] : model.state_dict()) in_state += name.find("position") != name.npos;
  for (const auto& [name, p] : model.named_parameters()) {
    in_parameters += name.find("position") != name.npos;
  }
  EXPECT_EQ(in_state, 1);
  EXPECT_EQ(in_parameters, 1);
  ASSERT_TRUE(model.state_dict().contains(table_name));
  EXPECT_EQ(model.state_dict().at(table_name).shape(), (Shape{8, 2}));  // [N_b, H]

  const models::Encoder& encoder = model.encoder();
  ASSERT_EQ(encoder.num_blocks(), 3);
  const nn::RelativeAttentionEncoding* table = encoder.block(0).relative_encoding();
  ASSERT_NE(table, nullptr);
  EXPECT_EQ(encoder.block(1).relative_encoding(), table);
  EXPECT_EQ(encoder.block(2).relative_encoding(), table);

  // The last block (which does not own the table) reads the table registered under block 0.
  model.eval();
  const Variable x(randn({1, 7, kWidth}, gen, 0.0, 1.0, DType::kF64));
  const Tensor before = encoder.block(2).forward(x).data();
  Tensor weight = model.state_dict().at(table_name);  // shares storage with the parameter
  weight.copy_from(randn(weight.shape(), gen, 0.0, 2.0, DType::kF64));
  const Tensor after = encoder.block(2).forward(x).data();
  EXPECT_FALSE(allclose(after, before, 0, 1e-6));
}

TEST(SoftmaxT5, BucketDirectionFollowsTheModelKindAndTheRecipe) {
  Generator gen(17);
  auto bidirectional = [](const models::Encoder& encoder) {
    return dynamic_cast<const nn::T5RelativeBias&>(*encoder.block(0).relative_encoding())
        .options()
        .bidirectional;
  };
  models::CausalLm causal(options_of(softmax_recipe("t5 {}")), gen, nullptr);
  EXPECT_FALSE(bidirectional(causal.encoder()));
  models::CausalLm causal_both(options_of(softmax_recipe("t5 { bidirectional: true }")), gen,
                               nullptr);
  EXPECT_TRUE(bidirectional(causal_both.encoder()));
  // A masked LM's trunk (bidirectional).
  models::Encoder encoder(masked_lm_options(softmax_recipe("t5 {}")), /*causal=*/false, gen,
                          nullptr);
  EXPECT_TRUE(bidirectional(encoder));
}

// ---------------------------------------------------------------------------------------------
// Streaming chunk attention.

/// Positions whose tokens can reach the output at p through `layers` blocks: each block lets
/// query q see [max(0, c·C − M), min(N, (c + 1)·C)) with c = ⌊q/C⌋ (and only keys <= q when
/// causal). Computed from the rule, independently of the model code.
std::set<int64_t> receptive_field(int64_t p, int64_t n, int64_t chunk, int64_t memory,
                                  int64_t layers, bool causal) {
  std::set<int64_t> reach = {p};
  for (int64_t l = 0; l < layers; ++l) {
    std::set<int64_t> next;
    for (int64_t q : reach) {
      const int64_t c0 = q / chunk * chunk;
      const int64_t lo = memory < 0 ? 0 : std::max<int64_t>(0, c0 - memory);
      const int64_t hi = causal ? q + 1 : std::min(n, c0 + chunk);
      for (int64_t j = lo; j < hi; ++j) next.insert(j);
    }
    reach = next;
  }
  return reach;
}

struct StreamingCase {
  std::string name;
  std::string position;
  bool causal = false;
  int64_t layers = 1;
};

void PrintTo(const StreamingCase& c, std::ostream* out) {
  *out << c.name;
}

class SoftmaxStreaming : public ::testing::TestWithParam<StreamingCase> {};

TEST_P(SoftmaxStreaming, TokensOutsideTheChunkWindowDoNotMatter) {
  const StreamingCase& c = GetParam();
  const int64_t n = 11, chunk = 3, memory = 2;
  const std::string recipe = softmax_recipe(c.position, "streaming { chunk: 3 left_memory: 2 }");
  const std::vector<std::string> layers = {"model.layers=" + std::to_string(c.layers)};
  const ModelOptions o = c.causal ? options_of(recipe, layers) : masked_lm_options(recipe, layers);
  ASSERT_EQ(o.softmax.stream_chunk, chunk);
  ASSERT_EQ(o.softmax.stream_left_memory, memory);
  Generator gen(18);
  std::unique_ptr<models::CausalLm> lm;
  std::unique_ptr<models::MaskedLm> mlm;
  if (c.causal) {
    lm = std::make_unique<models::CausalLm>(o, gen, nullptr);
    lm->eval();
  } else {
    mlm = std::make_unique<models::MaskedLm>(o, gen, nullptr);
    mlm->eval();
  }
  auto run = [&](const Tensor& ids) {
    return c.causal ? lm->forward(ids).data() : mlm->forward(ids).data();
  };
  const Tensor ids = random_ids(1, n, gen);
  const Tensor before = run(ids);
  for (int64_t j = 0; j < n; ++j) {
    Tensor changed = ids.clone();
    change_token(changed, 0, j);
    const Tensor after = run(changed);
    for (int64_t p = 0; p < n; ++p) {
      const bool reaches = receptive_field(p, n, chunk, memory, c.layers, c.causal).count(j) > 0;
      const Tensor row_after = after.slice(1, p, p + 1), row_before = before.slice(1, p, p + 1);
      if (reaches) {
        EXPECT_FALSE(allclose(row_after, row_before, 0, 1e-9)) << "token " << j << " → " << p;
      } else {
        EXPECT_TRUE(allclose(row_after, row_before, 0, 1e-12)) << "token " << j << " → " << p;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Windows, SoftmaxStreaming,
    ::testing::Values(
        StreamingCase{"mlm_rope_1_layer", "rope {}", false, 1},
        StreamingCase{"mlm_transformer_xl_1_layer", "transformer_xl {}", false, 1},
        StreamingCase{"mlm_t5_2_layers", "t5 { buckets: 8 max_distance: 16 }", false, 2},
        StreamingCase{"mlm_learned_2_layers", "learned_absolute { max_positions: 16 }", false, 2},
        StreamingCase{"mlm_shaw_2_layers", "shaw { clip: 3 }", false, 2},
        StreamingCase{"mlm_skew_1_layer", "skew { max_len: 16 }", false, 1},
        StreamingCase{"mlm_alibi_2_layers", "alibi {}", false, 2},
        StreamingCase{"causal_alibi_1_layer", "alibi {}", true, 1},
        StreamingCase{"causal_none_2_layers", "none {}", true, 2}),
    [](const ::testing::TestParamInfo<StreamingCase>& info) { return info.param.name; });

TEST(SoftmaxStreaming, ReceptiveFieldOfOneBlockIsTheChunkMask) {
  // The test's own window rule agrees with the layer's mask for one block.
  const int64_t n = 11, chunk = 3, memory = 2;
  const Tensor mask = nn::chunk_visibility_mask(n, chunk, memory, DType::kF64);
  for (int64_t p = 0; p < n; ++p) {
    const std::set<int64_t> reach = receptive_field(p, n, chunk, memory, 1, false);
    for (int64_t j = 0; j < n; ++j) {
      EXPECT_EQ(mask.at({p, j}) != 0.0, reach.count(j) > 0) << p << ", " << j;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Generation, attention dropout.

TEST(SoftmaxModels, StepIsUnsupportedAndSaysSo) {
  Generator gen(19);
  models::CausalLm softmax_lm(options_of(softmax_recipe("rope {}")), gen, nullptr);
  EXPECT_FALSE(softmax_lm.supports_step());
  EXPECT_FALSE(softmax_lm.encoder().supports_step());
  models::EncoderState state = softmax_lm.initial_state(1);
  try {
    softmax_lm.step(tensor_from({1.0}, {1}, DType::kI64), state);
    FAIL() << "step() on a softmax model did not throw";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("softmax"), std::string::npos) << error.what();
  }
  std::string linear = softmax_recipe("rope {}");
  linear.replace(linear.find("softmax {  }"), std::string("softmax {  }").size(), "linear {}");
  const ModelOptions lo = options_of(linear);
  ASSERT_EQ(lo.attention_family, models::AttentionFamily::kLinear);
  models::CausalLm linear_lm(lo, gen, nullptr);
  EXPECT_TRUE(linear_lm.supports_step());
}

TEST(SoftmaxModels, AttentionDropoutOnlyInTraining) {
  Generator gen(20);
  const ModelOptions o = options_of(softmax_recipe("alibi {}", "dropout: 0.5"));
  EXPECT_EQ(o.softmax.dropout, 0.5);
  models::CausalLm model(o, gen, std::make_shared<Generator>(21));
  const Tensor ids = random_ids(1, 8, gen);
  const Tensor first = model.forward(ids).data();
  EXPECT_FALSE(allclose(model.forward(ids).data(), first, 0, 1e-9));
  model.eval();
  const Tensor eval_first = model.forward(ids).data();
  EXPECT_TRUE(allclose(model.forward(ids).data(), eval_first, 0, 0));
}

// ---------------------------------------------------------------------------------------------
// Recipe translation.

TEST(ModelFromRecipe, TranslatesSoftmaxSettings) {
  const ModelOptions o =
      options_of(softmax_recipe("shaw { clip: 5 clip_left: 7 values: true }",
                                "scale: 0.5 dropout: 0.25 streaming { chunk: 4 left_memory: 8 }"));
  EXPECT_EQ(o.attention_family, models::AttentionFamily::kSoftmax);
  EXPECT_EQ(o.softmax.scale, 0.5);
  EXPECT_EQ(o.softmax.dropout, 0.25);
  EXPECT_EQ(o.softmax.stream_chunk, 4);
  EXPECT_EQ(o.softmax.stream_left_memory, 8);
  ASSERT_TRUE(std::holds_alternative<nn::ShawPosition>(o.position));
  const auto& shaw_position = std::get<nn::ShawPosition>(o.position);
  EXPECT_EQ(shaw_position.clip, 5);
  EXPECT_EQ(shaw_position.clip_left, 7);
  EXPECT_EQ(shaw_position.clip_right, 5);  // the resolver gives an unset side `clip`
  EXPECT_TRUE(shaw_position.values);

  // Streaming absent: full attention; an unset scale resolves to 1/√D.
  const ModelOptions full = options_of(softmax_recipe("alibi {}"));
  EXPECT_EQ(full.softmax.stream_chunk, 0);
  ASSERT_TRUE(full.softmax.scale.has_value());
  EXPECT_DOUBLE_EQ(*full.softmax.scale, 1.0 / std::sqrt(8.0));  // D = 16 / 2

  // The built layers use them.
  Generator gen(22);
  models::CausalLm model(o, gen, std::make_shared<Generator>(23));
  const auto& shaw =
      dynamic_cast<const nn::ShawRelativeEncoding&>(*model.encoder().block(0).relative_encoding());
  EXPECT_EQ(shaw.clip_left(), 7);
  EXPECT_EQ(shaw.clip_right(), 5);
  EXPECT_TRUE(shaw.value_table().defined());
  EXPECT_EQ(model.encoder().block(1).softmax_attention().scale(), 0.5);
}

TEST(ModelFromRecipe, TranslatesEverySoftmaxEncodingIntoItsTypedOption) {
  const auto t5 = std::get<nn::T5Position>(
      options_of(softmax_recipe("t5 { buckets: 8 max_distance: 16 bidirectional: false }"))
          .position);
  EXPECT_EQ(t5.buckets, 8);
  EXPECT_EQ(t5.max_distance, 16);
  EXPECT_EQ(t5.bidirectional, std::optional<bool>(false));
  const auto xl = std::get<nn::TransformerXlPosition>(
      options_of(softmax_recipe("transformer_xl { layout: CONCATENATED pe_width: 8 base: 500 }"))
          .position);
  EXPECT_EQ(xl.pe_dim, 8);
  EXPECT_EQ(xl.layout, nn::SinusoidLayout::kConcatenated);
  EXPECT_EQ(xl.base, 500.0);
  EXPECT_EQ(
      std::get<nn::TransformerXlPosition>(options_of(softmax_recipe("transformer_xl {}")).position)
          .pe_dim,
      kWidth);  // the resolver gives an unset pe_width the model width
  const auto skew = std::get<nn::SkewPosition>(
      options_of(softmax_recipe("skew { max_len: 16 per_head: true }")).position);
  EXPECT_EQ(skew.max_len, 16);
  EXPECT_TRUE(skew.per_head);
  const auto rope = std::get<nn::RopePosition>(
      options_of(softmax_recipe("rope { pairing: HALF base: 500 }")).position);
  EXPECT_EQ(rope.pairing, backend::LrpePairing::kHalf);
  EXPECT_EQ(rope.base, 500.0);
  EXPECT_TRUE(
      std::holds_alternative<nn::AlibiPosition>(options_of(softmax_recipe("alibi {}")).position));
  EXPECT_EQ(std::get<nn::SinusoidalPosition>(
                options_of(softmax_recipe("sinusoidal { base: 500 }")).position)
                .base,
            500.0);
}

TEST(ModelFromRecipe, RejectsLinearOnlyEncodingsWithSoftmaxAttention) {
  recipes::Recipe recipe = load(softmax_recipe("rope {}"));
  recipe.mutable_model()->mutable_position()->mutable_lrpe();
  try {
    app::model_options_from_recipe(recipe, kVocab);
    FAIL() << "lrpe with softmax attention was accepted";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("model.position.lrpe"), std::string::npos)
        << error.what();
  }
  recipe.mutable_model()->mutable_position()->mutable_permute_former();
  try {
    app::model_options_from_recipe(recipe, kVocab);
    FAIL() << "permute_former with softmax attention was accepted";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("model.position.permute_former"), std::string::npos)
        << error.what();
  }
}

TEST(ModelFromRecipe, RejectsSoftmaxOnlyEncodingsWithLinearAttention) {
  recipes::Recipe recipe = load(softmax_recipe("rope {}"));
  recipe.mutable_model()->mutable_attention()->mutable_linear();
  EXPECT_NO_THROW(app::model_options_from_recipe(recipe, kVocab));
  recipe.mutable_model()->mutable_position()->mutable_t5();
  try {
    app::model_options_from_recipe(recipe, kVocab);
    FAIL() << "t5 with linear attention was accepted";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("model.position"), std::string::npos) << error.what();
  }
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
