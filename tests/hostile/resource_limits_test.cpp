// Models and windows too large for the machine are refused before allocation, naming the fields
// and the estimate (exit code 2), instead of allocating until killed or a bare bad_alloc; a huge
// --context over a short split costs what the split costs.
#include <sys/resource.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "framework/base/file_io.h"
#include "tests/hostile/hostile_support.h"
#include "tests/support/program.h"
#include "tests/support/temp_dir.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

namespace fs = std::filesystem;
using hostile::expect_refused;
using hostile::rota;
const std::string& kTiny = hostile::kTinyRecipe;

TEST(ResourceLimits, TooManyLayersAreRefusedWithTheEstimate) {
  testing::TempDir dir;
  expect_refused(
      rota("train " + kTiny + " --out " + (dir / "run").string() + " --set model.layers=100000"),
      {"model: training needs about", "GB", "through 100000 layers", "model.layers (100000)",
       "available"});
  EXPECT_FALSE(fs::exists(dir / "run" / "checkpoints"));
}

TEST(ResourceLimits, HugeWidthsAreRefusedNamingTheFields) {
  testing::TempDir dir;
  expect_refused(rota("train " + kTiny + " --out " + (dir / "a").string() +
                      " --set model.width=1000000000 --set model.heads=2"),
                 {"model: training needs about", "model.width (1000000000)"});
  expect_refused(rota("train " + kTiny + " --out " + (dir / "b").string() +
                      " --set model.ffn_width=2000000000"),
                 {"model: training needs about", "model.ffn_width (2000000000)"});
}

TEST(ResourceLimits, MaxMemoryBoundsTrainingAndEvaluation) {
  testing::TempDir dir;
  const std::string run = (dir / "run").string();
  expect_refused(rota("train " + kTiny + " --out " + run + " --max-memory 300K"),
                 {"model: training needs about 1.14 MB",
                  "more than the 300 KB allowed by "
                  "--max-memory",
                  "or raise --max-memory"});
  EXPECT_FALSE(fs::exists(dir / "run" / "checkpoints"));
  ASSERT_EQ(rota("train " + kTiny + " --out " + run + " --max-memory 2M --set train.steps=2").code,
            0);
  // Evaluation: the weights fit, a window of 100000 tokens does not (its batch is checked
  // before its forward pass); a malformed size is a usage error.
  expect_refused(rota("eval " + run + " --split valid --context 100000 --max-memory 4M"),
                 {"model: evaluation needs about", "1 × 55769 tokens", "(rota eval: --context)"});
  const testing::CommandResult fits = rota("eval " + run + " --split valid --max-memory 4M");
  EXPECT_EQ(fits.code, 0) << fits.output;
  expect_refused(rota("eval " + run + " --max-memory 12Q"),
                 {"--max-memory 12Q: not a memory size"});
}

// Training refused for its activations suggests recomputing blocks, which then fits: the
// estimate keeps each block's input and one block's tensors (12.4 MB → 7.39 MB here).
TEST(ResourceLimits, ActivationBoundTrainingSuggestsRecomputingBlocks) {
  testing::TempDir dir;
  const std::string long_windows = " --set data.sequence_length=512 --max-memory 10M";
  expect_refused(rota("train " + kTiny + " --out " + (dir / "a").string() + long_windows),
                 {"model: training needs about 12.4 MB",
                  "set train.recompute_blocks: true (keeps only each block's input)"});
  const testing::CommandResult fits =
      rota("train " + kTiny + " --out " + (dir / "b").string() + long_windows +
           " --set train.recompute_blocks=true --set train.steps=2");
  EXPECT_EQ(fits.code, 0) << fits.output;
  // Already recomputing: no such suggestion.
  const testing::CommandResult still =
      rota("train " + kTiny + " --out " + (dir / "c").string() + long_windows +
           " --set train.recompute_blocks=true --max-memory 2M");
  EXPECT_NE(still.code, 0);
  EXPECT_EQ(still.output.find("recompute_blocks"), std::string::npos) << still.output;
}

// Long sequences of a causal linear model: the refusal suggests running them in segments, which
// then fits (one segment's activations: 96.4 MB → 24.5 MB here) and trains.
TEST(ResourceLimits, ActivationBoundLongSequencesSuggestSegments) {
  testing::TempDir dir;
  const std::string long_windows = " --set data.sequence_length=4096 --max-memory 40M";
  expect_refused(rota("train " + kTiny + " --out " + (dir / "a").string() + long_windows),
                 {"model: training needs about 96.4 MB",
                  "set train.segment_length: 1024 (keeps one segment's activations and the "
                  "attention states between segments)"});
  const testing::CommandResult fits =
      rota("train " + kTiny + " --out " + (dir / "b").string() + long_windows +
           " --set train.segment_length=1024 --set train.steps=1 --set train.eval_batches=1");
  EXPECT_EQ(fits.code, 0) << fits.output;
}

TEST(ResourceLimits, DryRunReportsTheModelAndEstimateAndWritesNothing) {
  testing::TempDir dir;
  const testing::CommandResult r =
      rota("train " + kTiny + " --out " + (dir / "run").string() + " --dry-run");
  ASSERT_EQ(r.code, 0) << r.output;
  for (const char* needle :
       {"dry run of", "model: CAUSAL_LM, 2 layers x width 32, 2 heads; 25520 parameters",
        "FLOPs per trained token", "memory (estimate): 1.14 MB",
        "first micro-batch: [4, 32] tokens", "schedule: 20 steps"}) {
    EXPECT_NE(r.output.find(needle), std::string::npos) << needle << "\n" << r.output;
  }
  EXPECT_NE(r.output.find("128 targets, loss "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(" per target (ln V = 5.5452 for V = 256 is a uniform guess)"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("warning:"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir / "run"));
  // A classifier's first micro-batch is examples, its baseline ln C over its classes.
  const testing::CommandResult classifier =
      rota("train " + std::string(ROTA_SOURCE_DIR) + "/recipes/tests/tiny_classifier.txtpb --out " +
           (dir / "classifier").string() + " --dry-run");
  ASSERT_EQ(classifier.code, 0) << classifier.output;
  EXPECT_NE(classifier.output.find(" examples, loss "), std::string::npos) << classifier.output;
  EXPECT_NE(classifier.output.find(" per example (ln C = 0.6931 for C = 2 classes"),
            std::string::npos)
      << classifier.output;
  EXPECT_EQ(classifier.output.find("targets"), std::string::npos) << classifier.output;
  // Over an existing run, the dry run says what the real run would do.
  const std::string run = (dir / "run").string();
  ASSERT_EQ(rota("train " + kTiny + " --out " + run + " --set train.steps=2").code, 0);
  const testing::CommandResult again = rota("train " + kTiny + " --out " + run + " --dry-run");
  ASSERT_EQ(again.code, 0) << again.output;
  EXPECT_NE(again.output.find("warning: the run would stop here: " + run +
                              " already holds a run (latest checkpoint "),
            std::string::npos)
      << again.output;
  const testing::CommandResult resumed =
      rota("train " + kTiny + " --out " + run + " --set train.steps=2 --dry-run --resume");
  ASSERT_EQ(resumed.code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("resume: the run would continue from " + run + "/checkpoints/"),
            std::string::npos)
      << resumed.output;
  // An impossible model is refused by the dry run too, before it is built.
  expect_refused(rota("train " + kTiny + " --dry-run --set model.layers=100000"),
                 {"model: training needs about"});
}

TEST(ResourceLimits, AHugeContextOverAShortSplitStaysSmall) {
  testing::TempDir dir;
  const std::string run = (dir / "run").string();
  ASSERT_EQ(rota("train " + kTiny + " --out " + run + " --set train.steps=2").code, 0);
  const testing::CommandResult normal = rota("eval " + run + " --split valid --context 100000");
  ASSERT_EQ(normal.code, 0) << normal.output;
  const testing::CommandResult huge = rota("eval " + run + " --split valid --context 10000000");
  ASSERT_EQ(huge.code, 0) << huge.output;
  // The same single window (the whole split) scores the same...
  const std::string loss = normal.output.substr(normal.output.rfind("loss="), 16);
  EXPECT_NE(huge.output.find(loss), std::string::npos) << loss << "\n" << huge.output;
  // ...in bounded memory: the largest child so far (this test's processes only) stays far from
  // the ~20 GB a 10M-token window of this model needs.
  rusage usage{};
  ASSERT_EQ(getrusage(RUSAGE_CHILDREN, &usage), 0);
  EXPECT_LT(usage.ru_maxrss, 1024L * 1024L) << "peak RSS " << usage.ru_maxrss << " KB";
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
