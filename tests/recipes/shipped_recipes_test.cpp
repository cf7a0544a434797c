// Every shipped recipe and ablation loads and validates; the main ones match the issues.
#include <gtest/gtest.h>

#include <filesystem>

#include <google/protobuf/util/message_differencer.h>

#include "recipes/ablation.h"
#include "recipes/loader.h"
#include "tests/support/source_tree.h"

namespace rota::recipes {
namespace ROTA_TEST_FILE_NS {

namespace fs = std::filesystem;

const fs::path kRecipes = fs::path(ROTA_SOURCE_DIR) / "recipes";

bool is_ablation(const fs::path& file) {
  return file.parent_path().filename() == "ablations" ||
         file.stem().string().find("ablation") != std::string::npos;
}

std::vector<fs::path> shipped_files() {
  std::vector<fs::path> files;
  for (const auto& entry : fs::recursive_directory_iterator(kRecipes)) {
    if (entry.path().extension() == ".txtpb") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

Recipe shipped(const std::string& relative) {
  return load_recipe(kRecipes / relative);
}

TEST(ShippedRecipes, EveryFileLoadsAndValidates) {
  const std::vector<fs::path> files = shipped_files();
  int recipes = 0, ablations = 0;
  for (const fs::path& file : files) {
    SCOPED_TRACE(file.string());
    try {
      if (is_ablation(file)) {
        load_ablation(file);
        ++ablations;
      } else {
        const Recipe recipe = load_recipe(file);
        // The resolved recipe written to a run directory reads back identically.
        const Recipe again = load_recipe_text(format_recipe(recipe), "resolved.txtpb");
        EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(recipe, again));
        ++recipes;
      }
    } catch (const RecipeError& error) {
      ADD_FAILURE() << error.what();
    }
  }
  // default, 7 WikiText-2 LMs, 1 masked LM, 2 classifiers, 5 bench, 4 test recipes; 4 + 1
  // ablations.
  EXPECT_GE(recipes, 20);
  EXPECT_GE(ablations, 5);
}

TEST(ShippedRecipes, EveryFileStartsWithOneCommentLine) {
  for (const fs::path& file : shipped_files()) {
    const std::string text = read_text_file(file);
    EXPECT_EQ(text.rfind("# ", 0), 0u) << file;
  }
}

TEST(ShippedRecipes, DefaultIsTheMainJob) {
  const Recipe recipe = shipped("default.txtpb");
  EXPECT_EQ(recipe.model().kind(), Model::CAUSAL_LM);
  EXPECT_EQ(recipe.data().corpus(), "tinyshakespeare");
  EXPECT_EQ(recipe.data().tokenizer().kind(), Tokenizer::CHAR);
  const LinearAttention& linear = recipe.model().attention().linear();
  EXPECT_EQ(linear.feature_map(), LinearAttention::ONE_PLUS_ELU);
  EXPECT_EQ(linear.normalization(), LinearAttention::LAYER_NORM);
  const Position& position = recipe.model().position();
  ASSERT_TRUE(position.has_lrpe());
  EXPECT_EQ(position.lrpe().type(), 2);
  EXPECT_EQ(position.lrpe().p(), Lrpe::HOUSEHOLDER);
  EXPECT_TRUE(position.lrpe().learn_theta());
  EXPECT_FALSE(position.add_sinusoidal());
  EXPECT_TRUE(recipe.train().has_sample());
  EXPECT_TRUE(recipe.optimizer().has_adamw());
  EXPECT_EQ(recipe.schedule().kind(), Schedule::COSINE);
}

TEST(ShippedRecipes, WikiText2HasOneCausalLmPerEncoding) {
  const std::vector<std::pair<std::string, Position::EncodingCase>> expected = {
      {"nope", Position::kNone},       {"sinusoidal", Position::kSinusoidal},
      {"rope", Position::kRope},       {"permute_former", Position::kPermuteFormer},
      {"lrpe_type1", Position::kLrpe}, {"lrpe_type2", Position::kLrpe},
      {"lrpe_type3", Position::kLrpe},
  };
  const Recipe reference = shipped("causal_lm/wikitext2_lrpe_type2.txtpb");
  for (const auto& [name, encoding] : expected) {
    SCOPED_TRACE(name);
    const Recipe recipe = shipped("causal_lm/wikitext2_" + name + ".txtpb");
    EXPECT_EQ(recipe.model().position().encoding_case(), encoding);
    EXPECT_EQ(recipe.data().corpus(), "wikitext-2");
    // Same hyper-parameters except the encoding (and the names).
    Recipe a = recipe, b = reference;
    a.mutable_model()->clear_position();
    b.mutable_model()->clear_position();
    for (Recipe* r : {&a, &b}) {
      r->clear_name();
      r->clear_description();
    }
    EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(a, b));
  }
  EXPECT_EQ(shipped("causal_lm/wikitext2_lrpe_type1.txtpb").model().position().lrpe().type(), 1);
  EXPECT_EQ(shipped("causal_lm/wikitext2_lrpe_type3.txtpb").model().position().lrpe().type(), 3);
}

TEST(ShippedRecipes, WikiText2HybridIsTheRopeRecipeWithEveryFourthBlockSoftmax) {
  const Recipe hybrid = shipped("causal_lm/wikitext2_hybrid.txtpb");
  ASSERT_TRUE(hybrid.model().has_hybrid());
  EXPECT_EQ(hybrid.model().hybrid().every(), 4);
  EXPECT_TRUE(hybrid.model().hybrid().attention().has_softmax());
  EXPECT_FALSE(hybrid.model().hybrid().has_position());  // model.position: RoPE
  EXPECT_TRUE(hybrid.model().position().has_rope());
  Recipe a = hybrid, b = shipped("causal_lm/wikitext2_rope.txtpb");
  a.mutable_model()->clear_hybrid();
  for (Recipe* r : {&a, &b}) {
    r->clear_name();
    r->clear_description();
  }
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(a, b));
}

TEST(ShippedRecipes, FineTuningStartsFromTheMaskedLmRun) {
  const Recipe mlm = shipped("masked_lm/wikitext2_lrpe.txtpb");
  EXPECT_EQ(mlm.model().kind(), Model::MASKED_LM);
  EXPECT_TRUE(mlm.model().position().has_lrpe());
  for (const char* file : {"classifier/sst2_from_mlm.txtpb", "classifier/cola_from_mlm.txtpb"}) {
    SCOPED_TRACE(file);
    const Recipe classifier = shipped(file);
    EXPECT_EQ(classifier.model().kind(), Model::CLASSIFIER);
    EXPECT_EQ(classifier.finetune().init_from(), "runs/" + mlm.name());
    // The encoder matches the checkpoint's.
    EXPECT_EQ(classifier.model().width(), mlm.model().width());
    EXPECT_EQ(classifier.model().layers(), mlm.model().layers());
    EXPECT_EQ(classifier.model().heads(), mlm.model().heads());
    EXPECT_EQ(classifier.model().ffn_width(), mlm.model().ffn_width());
    EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(classifier.model().position(),
                                                                   mlm.model().position()));
    EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(classifier.model().attention(),
                                                                   mlm.model().attention()));
    EXPECT_EQ(classifier.data().tokenizer().kind(), mlm.data().tokenizer().kind());
  }
}

TEST(ShippedRecipes, BenchSmallIsIssueSevensModel) {
  const Recipe bench = shipped("bench/bench_small.txtpb");
  EXPECT_EQ(bench.name(), "bench-small");
  EXPECT_EQ(bench.model().kind(), Model::CAUSAL_LM);
  EXPECT_EQ(bench.data().tokenizer().vocab_size(), 8192);
  EXPECT_EQ(bench.model().width(), 256);
  EXPECT_EQ(bench.model().layers(), 4);
  EXPECT_EQ(bench.model().heads(), 4);
  EXPECT_EQ(bench.model().ffn_width(), 1024);
  EXPECT_EQ(bench.model().ffn_activation(), Model::GELU);
  EXPECT_EQ(bench.data().sequence_length(), 512);
  EXPECT_EQ(bench.data().batch_size(), 8);
  EXPECT_EQ(bench.model().attention().linear().feature_map(), LinearAttention::ONE_PLUS_ELU);
  EXPECT_EQ(bench.model().attention().linear().normalization(), LinearAttention::LAYER_NORM);
  EXPECT_EQ(bench.model().position().lrpe().type(), 2);
  EXPECT_TRUE(bench.model().position().lrpe().learn_theta());
  EXPECT_EQ(bench.model().position().lrpe().p(), Lrpe::HOUSEHOLDER);
  EXPECT_TRUE(bench.model().tie_embeddings());
  EXPECT_TRUE(bench.optimizer().has_adamw());
  EXPECT_EQ(shipped("bench/bench_small_bidirectional.txtpb").model().kind(), Model::MASKED_LM);
  // The long-sequence variants keep the tokens per step of their 512-token baseline.
  const int64_t tokens = 512 * 16;
  for (const char* file :
       {"bench/bench_seq512_b16.txtpb", "bench/bench_seq2048.txtpb", "bench/bench_seq8192.txtpb"}) {
    const Recipe recipe = shipped(file);
    EXPECT_EQ(int64_t{recipe.data().sequence_length()} * recipe.data().batch_size(), tokens)
        << file;
  }
}

TEST(ShippedRecipes, AblationsHaveThreeSeedsAndTheIssuesVariants) {
  const std::map<std::string, std::vector<std::string>> expected = {
      {"encodings_causal.txtpb",
       {"nope", "sinusoidal", "sinusoidal_scaled", "rope", "permute_former", "lrpe_type1",
        "lrpe_type2", "lrpe_type3"}},
      {"bidirectional_glue.txtpb",
       {"sinusoidal", "rope", "permute_former", "lrpe_type1", "lrpe_type2", "lrpe_type3"}},
      {"softmax_vs_linear.txtpb",
       {"linear_lrpe", "softmax_sinusoidal", "softmax_rope", "softmax_shaw", "softmax_xl",
        "softmax_t5", "softmax_alibi"}},
      {"decay_gating.txtpb",
       {"nope", "lrpe_type2", "retnet", "lrpe_d", "lrpe_d_learnable", "gla", "ssd", "deltanet",
        "gated_deltanet", "hybrid", "softmax_rope"}},
  };
  for (const auto& [file, variants] : expected) {
    SCOPED_TRACE(file);
    const AblationPlan plan = load_ablation(kRecipes / "ablations" / file);
    EXPECT_GE(plan.ablation.seeds_size(), 3);
    std::vector<std::string> names;
    for (const Variant& variant : plan.ablation.variant()) names.push_back(variant.name());
    EXPECT_EQ(names, variants);
  }
  const AblationPlan p = load_ablation(kRecipes / "ablations" / "p_matrix.txtpb");
  EXPECT_EQ(p.ablation.variant_size(), 12);  // 3 types × 4 P
  EXPECT_GE(p.ablation.seeds_size(), 3);
  const std::vector<int> multipliers = {1, 2, 4, 8};
  const AblationPlan encodings = load_ablation(kRecipes / "ablations" / "encodings_causal.txtpb");
  EXPECT_EQ(std::vector<int>(encodings.ablation.context_multipliers().begin(),
                             encodings.ablation.context_multipliers().end()),
            multipliers);
  // Issue 21's family: each variant runs the mechanism its name says.
  const AblationPlan decay = load_ablation(kRecipes / "ablations" / "decay_gating.txtpb");
  EXPECT_EQ(std::vector<int>(decay.ablation.context_multipliers().begin(),
                             decay.ablation.context_multipliers().end()),
            multipliers);
  std::map<std::string, LinearAttention> linear;
  for (const Variant& variant : decay.ablation.variant()) {
    const Recipe recipe = run_recipe(decay, variant, 1);
    if (variant.name() == "hybrid") {
      EXPECT_EQ(recipe.model().hybrid().every(), 4);
      EXPECT_TRUE(recipe.model().hybrid().attention().has_softmax());
      EXPECT_TRUE(recipe.model().hybrid().position().has_rope());
      EXPECT_TRUE(recipe.model().position().has_lrpe());
    }
    if (recipe.model().attention().has_linear()) {
      linear[variant.name()] = recipe.model().attention().linear();
    }
  }
  EXPECT_EQ(linear.count("softmax_rope"), 0u);
  EXPECT_EQ(linear.at("retnet").decay().schedule(), Decay::RETNET);
  EXPECT_EQ(linear.at("retnet").normalization(), LinearAttention::GROUP_NORM);
  EXPECT_EQ(linear.at("lrpe_d").decay().schedule(), Decay::TRANSNORMER);
  EXPECT_TRUE(linear.at("lrpe_d_learnable").decay().learnable());
  EXPECT_TRUE(linear.at("gla").gating().has_gla());
  EXPECT_TRUE(linear.at("ssd").gating().has_ssd());
  EXPECT_EQ(linear.at("deltanet").update_rule(), LinearAttention::DELTA);
  EXPECT_FALSE(linear.at("deltanet").has_gating());
  EXPECT_EQ(linear.at("gated_deltanet").update_rule(), LinearAttention::DELTA);
  EXPECT_TRUE(linear.at("gated_deltanet").gating().has_ssd());
  const AblationPlan glue = load_ablation(kRecipes / "ablations" / "bidirectional_glue.txtpb");
  EXPECT_TRUE(glue.ablation.has_follow_up());
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::recipes
