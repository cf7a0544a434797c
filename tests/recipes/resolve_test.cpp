// Resolution (explicit and derived defaults, inapplicable fields left out) and the round trip.
#include <gtest/gtest.h>

#include <cmath>

#include <google/protobuf/util/message_differencer.h>

#include "recipes/field_path.h"
#include "recipes/loader.h"
#include "recipes/resolve.h"
#include "tests/recipes/recipe_test_util.h"

namespace rota::recipes {
namespace ROTA_TEST_FILE_NS {

using google::protobuf::util::MessageDifferencer;
using testing::kBaseRecipe;

Recipe load(const std::vector<std::string>& overrides = {}) {
  return load_recipe_text(kBaseRecipe, "test.txtpb", overrides);
}

TEST(RecipeResolve, SchemaDefaultsBecomeExplicit) {
  const Recipe recipe = load();
  EXPECT_TRUE(recipe.model().has_ffn_activation());
  EXPECT_EQ(recipe.model().ffn_activation(), Model::GELU);
  EXPECT_TRUE(recipe.model().has_dropout());
  EXPECT_EQ(recipe.model().dropout(), 0.1);
  EXPECT_TRUE(recipe.model().attention().linear().has_feature_map());
  EXPECT_TRUE(recipe.model().attention().linear().has_chunk_size());
  EXPECT_TRUE(recipe.model().position().lrpe().has_learn_theta());
  EXPECT_TRUE(recipe.model().position().lrpe().has_pairing());
  EXPECT_TRUE(recipe.model().position().has_add_sinusoidal());
  EXPECT_TRUE(recipe.data().has_shuffle());
  EXPECT_TRUE(recipe.schedule().has_kind());
  EXPECT_TRUE(recipe.train().has_seed());
  EXPECT_TRUE(recipe.train().has_dtype());
  EXPECT_TRUE(recipe.optimizer().has_decay_norms());
}

TEST(RecipeResolve, DefaultOneofMembers) {
  Recipe recipe = load({"model.attention={}", "optimizer={}"});
  EXPECT_TRUE(recipe.model().attention().has_linear());
  ASSERT_TRUE(recipe.optimizer().has_adamw());
  EXPECT_EQ(recipe.optimizer().adamw().weight_decay(), 0.01);
  EXPECT_TRUE(recipe.optimizer().adamw().has_beta2());
}

TEST(RecipeResolve, DerivedDefaults) {
  const Recipe recipe = load();
  EXPECT_EQ(recipe.model().ffn_width(), 4 * 64);
  EXPECT_EQ(recipe.train().best_metric(), Train::LOSS);

  const Recipe softmax = load({"model.attention={softmax {}}", "model.position={shaw {clip: 8}}"});
  EXPECT_EQ(softmax.model().attention().softmax().scale(), 1.0 / std::sqrt(16.0));  // D = 64 / 4
  EXPECT_EQ(softmax.model().position().shaw().clip_left(), 8);
  EXPECT_EQ(softmax.model().position().shaw().clip_right(), 8);

  const Recipe xl = load({"model.attention={softmax {}}", "model.position={transformer_xl {}}"});
  EXPECT_EQ(xl.model().position().transformer_xl().pe_width(), 64);

  const Recipe causal_t5 = load({"model.attention={softmax {}}", "model.position={t5 {}}"});
  EXPECT_FALSE(causal_t5.model().position().t5().bidirectional());
  const Recipe masked_t5 =
      load({"model.kind=MASKED_LM", "model.attention={softmax {}}", "model.position={t5 {}}"});
  EXPECT_TRUE(masked_t5.model().position().t5().bidirectional());

  const Recipe cola =
      load({"model.kind=CLASSIFIER", "data.corpus=cola", "model.classifier.num_classes=2"});
  EXPECT_EQ(cola.train().best_metric(), Train::MCC);
  const Recipe sst2 =
      load({"model.kind=CLASSIFIER", "data.corpus=sst-2", "model.classifier.num_classes=2"});
  EXPECT_EQ(sst2.train().best_metric(), Train::ACCURACY);
}

TEST(RecipeResolve, ExplicitValuesWin) {
  const Recipe recipe = load(
      {"model.ffn_width=100", "model.attention={softmax {scale: 1}}", "model.position={rope {}}"});
  EXPECT_EQ(recipe.model().ffn_width(), 100);
  EXPECT_EQ(recipe.model().attention().softmax().scale(), 1.0);
}

TEST(RecipeResolve, FieldsThatDoNotApplyStayUnset) {
  const Recipe type3 = load({"model.position={lrpe {type: 3}}"});
  EXPECT_FALSE(type3.model().position().lrpe().has_learn_theta());
  EXPECT_FALSE(type3.model().position().lrpe().has_theta_base());
  EXPECT_FALSE(type3.model().position().lrpe().has_pairing());
  EXPECT_TRUE(type3.model().position().lrpe().has_p());
  const Recipe base = load();
  EXPECT_FALSE(base.model().attention().linear().has_denominator_eps());
  EXPECT_FALSE(base.model().has_classifier());
  EXPECT_FALSE(base.data().has_mlm());
  EXPECT_FALSE(base.data().has_tsv());
  EXPECT_FALSE(base.data().tokenizer().has_vocab_size());
  EXPECT_FALSE(base.data().tokenizer().has_min_freq());
  EXPECT_FALSE(base.data().tokenizer().has_character_coverage());
  EXPECT_FALSE(base.data().tokenizer().has_byte_fallback());
  const Recipe nope = load({"model.position={none {}}"});
  EXPECT_FALSE(nope.model().position().has_add_sinusoidal());
  const Recipe constant = load({"schedule.kind=CONSTANT"});
  EXPECT_FALSE(constant.schedule().has_min_lr());
}

// The default start is PYTORCH (issue 39), which has no σ; a σ without a scheme keeps the
// meaning it had when NORMAL was the default; a σ with another scheme is refused.
TEST(RecipeResolve, InitialisationDefaultsToPytorchAndASigmaAloneSelectsNormal) {
  const Recipe base = load();
  EXPECT_TRUE(base.model().has_init_scheme());
  EXPECT_EQ(base.model().init_scheme(), Model::PYTORCH);
  EXPECT_FALSE(base.model().has_init_std());
  const Recipe sigma = load({"model.init_std=0.05"});
  EXPECT_EQ(sigma.model().init_scheme(), Model::NORMAL);
  EXPECT_EQ(sigma.model().init_std(), 0.05);
  const Recipe gpt2 = load({"model.init_scheme=GPT2"});
  EXPECT_EQ(gpt2.model().init_std(), 0.02);  // its schema default
  EXPECT_THROW(load({"model.init_scheme=WIDTH_SCALED", "model.init_std=0.05"}), RecipeError);
  // The resolved text names the scheme, so it reads back the same under any later default.
  const std::string text = format_recipe(sigma);
  EXPECT_NE(text.find("init_scheme: NORMAL"), std::string::npos) << text;
}

TEST(RecipeResolve, SectionsThatApplyAreCreated) {
  const Recipe masked = load({"model.kind=MASKED_LM"});
  ASSERT_TRUE(masked.data().has_mlm());
  EXPECT_EQ(masked.data().mlm().probability(), 0.15);
  EXPECT_EQ(masked.data().mlm().mask_fraction(), 0.8);
  EXPECT_EQ(masked.data().mlm().random_fraction(), 0.1);
  const Recipe classifier =
      load({"model.kind=CLASSIFIER", "data.corpus=sst-2", "model.classifier.num_classes=2"});
  EXPECT_EQ(classifier.model().classifier().pooling(), Classifier::MEAN);
  EXPECT_FALSE(classifier.model().has_tie_embeddings());
  const Recipe word = load({"data.corpus=wikitext-2", "data.tokenizer.kind=WORD"});
  EXPECT_EQ(word.data().tokenizer().min_freq(), 1);
  const Recipe bpe = load({"data.tokenizer={kind: SENTENCEPIECE_BPE vocab_size: 64}"});
  EXPECT_EQ(bpe.data().tokenizer().character_coverage(), 1.0);
  EXPECT_FALSE(bpe.data().tokenizer().byte_fallback());
  EXPECT_TRUE(bpe.data().tokenizer().has_byte_fallback());
}

TEST(RecipeResolve, OptionalSectionsAreNotCreated) {
  const Recipe recipe = load({"model.attention={softmax {}}", "model.position={rope {}}"});
  EXPECT_FALSE(recipe.has_finetune());
  EXPECT_FALSE(recipe.train().has_sample());
  EXPECT_FALSE(recipe.model().attention().softmax().has_streaming());
  const Recipe streaming =
      load({"model.attention={softmax {streaming {}}}", "model.position={rope {}}"});
  EXPECT_EQ(streaming.model().attention().softmax().streaming().chunk(), 16);
  EXPECT_EQ(streaming.model().attention().softmax().streaming().left_memory(), -1);
  const Recipe finetune = load({"finetune.init_from=runs/x"});
  EXPECT_EQ(finetune.finetune().strictness(), Finetune::PARTIAL);
  EXPECT_FALSE(finetune.finetune().has_lora());  // a plain fine-tune trains every parameter
  const Recipe lora = load({"finetune.init_from=runs/x", "finetune.lora.rank=4"});
  EXPECT_EQ(lora.finetune().lora().rank(), 4);
  EXPECT_EQ(lora.finetune().lora().alpha(), 16.0);
  EXPECT_EQ(lora.finetune().lora().dropout(), 0.0);
}

TEST(RecipeResolve, IsIdempotent) {
  Recipe once = load({"model.attention={softmax {}}", "model.position={t5 {}}"});
  Recipe twice = once;
  resolve_recipe(twice);
  EXPECT_TRUE(MessageDifferencer::Equals(once, twice));
}

TEST(RecipeResolve, SkipsDerivedValuesWhoseInputsAreInvalid) {
  Recipe recipe;
  recipe.mutable_model()->set_heads(0);
  recipe.mutable_model()->mutable_attention()->mutable_softmax();
  resolve_recipe(recipe);
  EXPECT_FALSE(recipe.model().attention().softmax().has_scale());  // no division by zero
}

// ---- round trip ----

void expect_round_trip(const Recipe& recipe) {
  const std::string text = format_recipe(recipe, "Resolved recipe\n\nwritten by a test");
  const Recipe again = load_recipe_text(text, "again.txtpb");
  std::string differences;
  MessageDifferencer differencer;
  differencer.ReportDifferencesToString(&differences);
  EXPECT_TRUE(differencer.Compare(recipe, again)) << differences << "\n" << text;
}

TEST(RecipeRoundTrip, PrintedRecipeParsesBackEqual) {
  expect_round_trip(load());
  expect_round_trip(
      load({"model.kind=MASKED_LM", "model.attention={softmax {streaming {}}}",
            "model.position={t5 {}}", "schedule.lr=3.3e-4", "model.dropout=0.123456789"}));
  expect_round_trip(load({"model.kind=CLASSIFIER", "data.tsv_dir=/data/glue",
                          "data.tsv={text: \"3\" label: \"1\" header: ABSENT}",
                          "model.classifier.num_classes=3", "finetune.init_from=runs/x",
                          "finetune.freeze=[embeddings, blocks.0.]", "train.epochs=2.5"}));
  expect_round_trip(load({R"(train.sample={prompt: "a \"quoted\"\n line" tokens: 7})",
                          "train.seed=18446744073709551615"}));
}

TEST(RecipeRoundTrip, HeaderIsCommentLines) {
  const std::string text = format_recipe(load(), "first\n\nthird");
  EXPECT_EQ(text.rfind("# first\n#\n# third\nversion: 1\n", 0), 0u) << text;
  EXPECT_EQ(format_recipe(load()).rfind("version: 1\n", 0), 0u);
}

// ---- field paths ----

TEST(FieldPath, SplitsNamesAndIndices) {
  const std::vector<PathPart> parts = split_path("finetune.freeze[12].x");
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[0].name, "finetune");
  EXPECT_EQ(parts[0].index, -1);
  EXPECT_EQ(parts[1].name, "freeze");
  EXPECT_EQ(parts[1].index, 12);
  EXPECT_EQ(parts[2].name, "x");
  EXPECT_TRUE(split_path("").empty());
}

TEST(FieldPath, FindsFieldsAndMessageTypes) {
  EXPECT_EQ(field_at(Recipe::descriptor(), "model.position.lrpe.type")->full_name(),
            "rota.recipes.Lrpe.type");
  EXPECT_EQ(field_at(Recipe::descriptor(), "model.nope"), nullptr);
  EXPECT_EQ(field_at(Recipe::descriptor(), "model.width.x"), nullptr);
  EXPECT_EQ(message_type_at(Recipe::descriptor(), "model.position"), Position::descriptor());
  EXPECT_EQ(message_type_at(Recipe::descriptor(), ""), Recipe::descriptor());
  EXPECT_EQ(message_type_at(Recipe::descriptor(), "model.width"), nullptr);
}

TEST(FieldPath, SuggestsCloseNamesAndAbbreviations) {
  const std::vector<std::string> names = {"layers", "heads", "width", "optimizer", "options"};
  EXPECT_EQ(closest_name("lyers", names), "layers");
  EXPECT_EQ(closest_name("Heads", names), "heads");
  EXPECT_EQ(closest_name("optimiser", names), "optimizer");
  EXPECT_EQ(closest_name("optimi", names), "optimizer");
  EXPECT_EQ(closest_name("opt", names), std::nullopt);  // ambiguous abbreviation
  EXPECT_EQ(closest_name("zzz", names), std::nullopt);
  EXPECT_EQ(closest_name("shakespeare", {"tinyshakespeare", "wikitext-2"}), "tinyshakespeare");
  EXPECT_EQ(closest_name("text", {"wikitext-2", "text_dir"}), "text_dir");   // prefix first
  EXPECT_EQ(closest_name("ext", {"wikitext-2", "text_dir"}), std::nullopt);  // ambiguous
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::recipes
