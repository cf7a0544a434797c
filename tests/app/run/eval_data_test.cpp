// `rota eval --data SOURCE`: a run evaluated on another dataset through its own tokenizer.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "app/run/eval_run.h"
#include "app/run/exit_codes.h"
#include "app/run/train_run.h"
#include "app/setup/eval_data_setup.h"
#include "data/corpus/corpus.h"
#include "recipes/loader.h"
#include "recipes/recipe_error.h"
#include "tests/support/source_tree.h"
#include "tests/support/temp_dir.h"

namespace rota::app {
namespace ROTA_TEST_FILE_NS {

namespace fs = std::filesystem;
using rota::testing::TempDir;

std::string recipe_path(const std::string& name) {
  return std::string(ROTA_SOURCE_DIR) + "/recipes/tests/" + name + ".txtpb";
}

void train_tiny(const fs::path& out) {
  TrainRequest args;
  args.recipe = recipe_path("tiny_causal_lm");
  args.out = out.string();
  args.overrides = {"train.steps=2", "train.eval_every=0", "train.checkpoint_every=0",
                    "train.eval_batches=1"};
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  const int code = run_training(args);
  ::testing::internal::GetCapturedStderr();
  ::testing::internal::GetCapturedStdout();
  ASSERT_EQ(code, kExitOk);
}

// The metrics line `rota eval` prints.
std::string eval_line(const fs::path& run, const std::string& split, const std::string& data) {
  EvalRequest request;
  request.checkpoint = run.string();
  request.split = split;
  request.data = data;
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  int code = -1;
  try {
    code = run_evaluation(request);
  } catch (...) {
    ::testing::internal::GetCapturedStderr();
    ::testing::internal::GetCapturedStdout();
    throw;
  }
  ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(code, kExitOk);
  return ::testing::internal::GetCapturedStdout();
}

TEST(EvalData, AFileHoldingASplitScoresExactlyAsThatSplit) {
  TempDir dir;
  const fs::path run = dir.path() / "run";
  train_tiny(run);
  // The run's own test split (Tiny Shakespeare's last 5 %), written out as a user's file.
  const std::string test_text = data::Corpus::open("tinyshakespeare").read_text("test");
  ASSERT_EQ(test_text.back(), '\n');
  std::ofstream(dir.path() / "mine.txt", std::ios::binary) << test_text;
  const std::string own = eval_line(run, "test", "");
  const std::string other = eval_line(run, "", (dir.path() / "mine.txt").string());
  EXPECT_EQ(other, own);
  EXPECT_NE(own.find("tokens=55769"), std::string::npos) << own;  // 55,770 bytes, first unscored
  // A glob over two halves reads them in name order: the same stream, so the same numbers.
  const size_t half = test_text.find('\n', test_text.size() / 2) + 1;
  std::ofstream(dir.path() / "part_a.txt", std::ios::binary) << test_text.substr(0, half);
  std::ofstream(dir.path() / "part_b.txt", std::ios::binary) << test_text.substr(half);
  EXPECT_EQ(eval_line(run, "", (dir.path() / "part_*.txt").string()), own);
  // A registered corpus by name: its splits, as the run's own.
  EXPECT_EQ(eval_line(run, "valid", "tinyshakespeare"), eval_line(run, "valid", ""));
}

TEST(EvalData, RefusesWhatItCannotRead) {
  const recipes::Recipe trained = recipes::load_recipe(recipe_path("tiny_causal_lm"));
  const auto expect_refusal = [&](const std::string& data, const std::string& split,
                                  const std::string& fragment) {
    try {
      recipe_on_data(trained, data, split);
      ADD_FAILURE() << "expected a RecipeError for " << data;
    } catch (const recipes::RecipeError& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  TempDir dir;
  expect_refusal((dir.path() / "nothing.txt").string(), "", "neither a registered corpus (");
  std::ofstream(dir.path() / "x.txt") << "some text\n";
  expect_refusal((dir.path() / "x.txt").string(), "valid", "--split valid: with --data PATH");
  // A language model cannot be evaluated on CSV records' labels, but on their text it can.
  std::ofstream(dir.path() / "x.csv") << "text,label\nhello,pos\n";
  const EvalData on_csv = recipe_on_data(trained, (dir.path() / "x.csv").string(), "");
  EXPECT_EQ(on_csv.split, "test");
  EXPECT_EQ(on_csv.recipe.data().files().test(), (dir.path() / "x.csv").string());
  EXPECT_FALSE(on_csv.recipe.data().files().has_label_field());
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::app
