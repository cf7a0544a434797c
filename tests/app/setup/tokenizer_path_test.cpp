// data.tokenizer.path: Hugging Face tokenizer.json and SentencePiece .model files train, are kept
// in checkpoints, and a kind written next to the path must be what the file holds.
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "app/run/eval_run.h"
#include "app/run/exit_codes.h"
#include "app/run/train_run.h"
#include "data/tokenizer/open_tokenizer.h"
#include "framework/base/file_io.h"
#include "recipes/loader.h"
#include "recipes/recipe_error.h"
#include "tests/support/source_tree.h"
#include "tests/support/temp_dir.h"

namespace rota::app {
namespace ROTA_TEST_FILE_NS {

namespace fs = std::filesystem;
using rota::testing::TempDir;

std::string golden(const std::string& name) {
  return std::string(ROTA_SOURCE_DIR) + "/tests/golden/tokenizers/" + name;
}

std::string recipe_path(const std::string& name) {
  return std::string(ROTA_SOURCE_DIR) + "/recipes/tests/" + name + ".txtpb";
}

// Trains `recipe` for two steps with the overrides; returns the exit code and the error text.
std::pair<int, std::string> train(const std::string& recipe, std::vector<std::string> overrides,
                                  const fs::path& out) {
  TrainRequest args;
  args.recipe = recipe_path(recipe);
  args.out = out.string();
  args.overrides = {"train.steps=2", "train.eval_every=2", "train.checkpoint_every=2",
                    "train.eval_batches=1"};
  args.overrides.insert(args.overrides.end(), overrides.begin(), overrides.end());
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  int code = kExitOk;
  std::string message;
  try {
    code = run_training(args);
  } catch (const std::exception& e) {
    code = exit_code_of(e);
    message = e.what();
  }
  ::testing::internal::GetCapturedStderr();
  ::testing::internal::GetCapturedStdout();
  return {code, message};
}

TEST(TokenizerPath, ResolvingLeavesTheKindToTheFile) {
  const std::vector<std::string> with_path = {"data.tokenizer.path=" + golden("gpt2_bpe.json")};
  const recipes::Recipe recipe = recipes::load_recipe(recipe_path("tiny_causal_lm"), with_path);
  // tiny_causal_lm writes kind: BYTE; a recipe without it keeps kind unset next to a path.
  EXPECT_TRUE(recipe.data().tokenizer().has_kind());
  const recipes::Recipe bare = recipes::load_recipe_text(
      "version: 1\nmodel { kind: CAUSAL_LM width: 32 layers: 1 heads: 2 position { rope {} } }\n"
      "data { corpus: \"tinyshakespeare\" tokenizer { path: \"x.json\" } }\n"
      "train { steps: 1 }\n",
      "bare.txtpb");
  EXPECT_FALSE(bare.data().tokenizer().has_kind());
  try {
    recipes::load_recipe_text(
        "version: 1\nmodel { kind: CAUSAL_LM width: 32 layers: 1 heads: 2 position { rope {} } }\n"
        "data { corpus: \"tinyshakespeare\" tokenizer { kind: HUGGINGFACE } }\n"
        "train { steps: 1 }\n",
        "hf.txtpb");
    ADD_FAILURE() << "HUGGINGFACE without a path was accepted";
  } catch (const recipes::RecipeError& e) {
    EXPECT_NE(std::string(e.what()).find("data.tokenizer.kind"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("loaded, not trained"), std::string::npos) << e.what();
  }
}

TEST(TokenizerPath, HuggingFaceTokenizerJsonTrainsAndIsKeptInCheckpoints) {
  TempDir dir;
  const auto [code, message] =
      train("tiny_causal_lm",
            {"data.tokenizer.path=" + golden("gpt2_bpe.json"), "data.tokenizer.kind=HUGGINGFACE"},
            dir / "run");
  ASSERT_EQ(code, kExitOk) << message;
  // The checkpoint holds the file as given, and rebuilds the same tokenizer.
  const fs::path checkpoint = dir / "run/checkpoints/step_000002";
  EXPECT_EQ(read_file(checkpoint / "tokenizer.json"), read_file(golden("gpt2_bpe.json")));
  const auto saved = data::open_tokenizer(checkpoint);
  const auto original = data::open_tokenizer(golden("gpt2_bpe.json"));
  EXPECT_EQ(saved->kind(), "huggingface");
  EXPECT_EQ(saved->encode("ROMEO: But soft!\n"), original->encode("ROMEO: But soft!\n"));
  EvalRequest eval;
  eval.checkpoint = (dir / "run").string();
  eval.split = "valid";
  eval.batches = 1;
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(run_evaluation(eval), kExitOk);
  ::testing::internal::GetCapturedStderr();
  EXPECT_NE(::testing::internal::GetCapturedStdout().find("split=valid loss="), std::string::npos);
}

TEST(TokenizerPath, MaskedLmUsesTheRolesOfABertTokenizer) {
  TempDir dir;
  // [MASK], [PAD], [CLS] come from the file's added tokens and post-processor.
  const auto [code, message] = train(
      "tiny_masked_lm",
      {"data.tokenizer.path=" + golden("bert_wordpiece.json"), "data.tokenizer.kind=HUGGINGFACE"},
      dir / "run");
  EXPECT_EQ(code, kExitOk) << message;
}

TEST(TokenizerPath, SentencePieceModelFileTrains) {
  TempDir dir;
  const auto [code, message] = train("tiny_causal_lm",
                                     {"data.tokenizer.path=" + golden("spm_t5_style.model"),
                                      "data.tokenizer.kind=SENTENCEPIECE_UNIGRAM"},
                                     dir / "run");
  EXPECT_EQ(code, kExitOk) << message;
}

TEST(TokenizerPath, AKindThatIsNotTheFilesIsRefusedBeforeTraining) {
  TempDir dir;
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"data.tokenizer.path=" + golden("gpt2_bpe.json"), "data.tokenizer.kind=BYTE"},
       "data.tokenizer.kind: BYTE, but data.tokenizer.path " + golden("gpt2_bpe.json") +
           " holds a HUGGINGFACE tokenizer"},
      {{"data.tokenizer.path=" + golden("spm_t5_style.model"),
        "data.tokenizer.kind=SENTENCEPIECE_BPE"},
       "holds a SENTENCEPIECE_UNIGRAM tokenizer"},
      {{"data.tokenizer.path=" + golden("stress.txt")}, "not a tokenizer: "},
  };
  for (const auto& [overrides, fragment] : cases) {
    const auto [code, message] = train("tiny_causal_lm", overrides, dir / "run");
    EXPECT_NE(code, kExitOk);
    EXPECT_NE(message.find(fragment), std::string::npos) << message;
    EXPECT_FALSE(fs::exists(dir / "run/checkpoints")) << fragment;
  }
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::app
