// Quick tries at the command line: misspelt options and corpus names get the closest one, the
// validation split answers to its usual names, --version names the commit and build, and the
// resume line repeats the command as it was invoked.
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/support/program.h"
#include "tests/support/source_tree.h"
#include "tests/support/temp_dir.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

const std::string kTiny = std::string(ROTA_SOURCE_DIR) + "/recipes/tests/tiny_causal_lm.txtpb";

testing::CommandResult rota(const std::string& arguments) {
  return testing::run_command("OMP_NUM_THREADS=1 " + testing::built_rota() + " " + arguments);
}

void expect_output(const testing::CommandResult& r, int code,
                   const std::vector<std::string>& needles) {
  EXPECT_EQ(r.code, code) << r.output;
  for (const std::string& needle : needles) {
    EXPECT_NE(r.output.find(needle), std::string::npos) << "no '" << needle << "' in\n" << r.output;
  }
}

TEST(CliErgonomics, AMisspeltOptionNamesTheClosestOne) {
  expect_output(rota("train " + kTiny + " --stpo-after 3"), 2,
                {"rota train: unknown option '--stpo-after' (did you mean '--stop-after'?)"});
  expect_output(rota("eval runs/x --contxt=5"), 2,
                {"rota eval: unknown option '--contxt' (did you mean '--context'?)"});
  expect_output(rota("data prepare --outt d"), 2, {"rota data prepare: unknown option '--outt'"});
}

TEST(CliErgonomics, ASetValueSplitByTheShellGetsTheQuotedCommand) {
  // What the shell makes of --set model.position={rope {}} typed without quotes.
  expect_output(rota("train " + kTiny + " --dry-run --set 'model.position={rope' '{}}'"), 2,
                {"--set model.position={rope: its braces do not balance: the shell split the "
                 "value at a space; quote it: --set 'model.position={rope {}}'"});
  expect_output(rota("eval runs/x --set=model.position={lrpe --set train.steps=2"), 2,
                {"--set model.position={lrpe: its braces do not balance",
                 "--set 'model.position={lrpe ...}'"});
  // Quoted, the same value is taken (and a balanced one is never flagged).
  const testing::CommandResult quoted =
      rota("train " + kTiny + " --dry-run --set 'model.position={rope {}}'");
  EXPECT_EQ(quoted.code, 0) << quoted.output;
  EXPECT_EQ(quoted.output.find("do not balance"), std::string::npos) << quoted.output;
}

TEST(CliErgonomics, EvalOnDataWithoutATestSplitNamesTheSplitsAndTheFlag) {
  testing::TempDir dir;
  std::string text;
  for (int i = 0; i < 200; ++i) text += "the cat sat on the mat and the dog ran far away\n";
  std::ofstream(dir / "train.txt") << text;
  std::ofstream(dir / "valid.txt") << text.substr(0, 2000);
  const std::string run = (dir / "run").string();
  ASSERT_EQ(rota("train " + kTiny + " --unset data.corpus --set 'data.files={train: \"" +
                 (dir / "train.txt").string() + "\" valid: \"" + (dir / "valid.txt").string() +
                 "\"}' --set train.steps=2 --set train.eval_batches=1 --out " + run)
                .code,
            0);
  // The default split (test) and a named one it lacks: a usage error naming what there is.
  expect_output(rota("eval " + run), 2,
                {run + " has no 'test' split (the default): its data has train, valid; evaluate "
                       "another split with --split valid"});
  expect_output(rota("eval " + run + " --split test"), 2,
                {run + " has no 'test' split: its data has train, valid"});
  // Its validation split by any of its names.
  expect_output(rota("eval " + run + " --split dev --batches 1"), 0, {"split=valid "});
}

TEST(CliErgonomics, AValueThatLooksLikeAnOptionIsAValue) {
  testing::TempDir dir;
  const std::string run = (dir / "run").string();
  ASSERT_EQ(rota("train " + kTiny + " --out " + run + " --set train.steps=1").code, 0);
  const testing::CommandResult r =
      rota("generate " + run + " --prompt -hello --tokens 2 --temperature 0");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(r.output.rfind("-hello", 0), 0u) << r.output;
  // The validation split by any of its usual names.
  for (const char* name : {"valid", "validation", "val", "dev"}) {
    expect_output(rota("eval " + run + " --split " + name + " --batches 1"), 0, {"split=valid "});
  }
}

TEST(CliErgonomics, UnsetRemovesASectionAndEvalTakesOverrides) {
  testing::TempDir dir;
  const std::string run = (dir / "run").string();
  // The shipped fine-tuning recipe without its pretrained run: --unset finetune trains it from
  // scratch (with finetune it needs runs/mlm-wikitext2-lrpe).
  const std::string recipe =
      std::string(ROTA_SOURCE_DIR) + "/recipes/classifier/sst2_from_mlm.txtpb";
  const std::string shorter = " --set train.steps=2 --set schedule.warmup_steps=0";
  expect_output(rota("train " + recipe + " --out " + run + shorter), 1, {"checkpoint runs/mlm"});
  // A small model and vocabulary: the evaluations below read the whole validation split.
  const std::string smaller =
      " --set model.width=32 --set model.heads=2 --set model.layers=1 --set model.ffn_width=64"
      " --set data.tokenizer.vocab_size=512";
  expect_output(rota("train " + recipe + " --out " + run + " --unset finetune" + shorter + smaller +
                     " --set train.eval_batches=1"),
                0, {"step=2 run="});
  expect_output(rota("train " + recipe + " --unset finetun"), 2,
                {"--unset finetun: unknown field 'finetun' (did you mean 'finetune'?)"});
  // rota eval --set: the same numbers with another batch size; a field that changes the model's
  // shapes is refused by the strict load; an unknown field by name.
  const testing::CommandResult base = rota("eval " + run + " --split valid");
  const testing::CommandResult batched =
      rota("eval " + run + " --split valid --set data.batch_size=3");
  ASSERT_EQ(base.code, 0) << base.output;
  ASSERT_EQ(batched.code, 0) << batched.output;
  const std::string loss = base.output.substr(base.output.rfind("loss="), 14);
  EXPECT_NE(batched.output.find(loss), std::string::npos) << loss << "\n" << batched.output;
  expect_output(rota("eval " + run + " --set model.width=64"), 2,
                {"differs in model.width: 32 -> 64", "leave these model fields out of --set"});
  expect_output(rota("eval " + run + " --set data.batch_sz=3"), 2,
                {"--set data.batch_sz=3: data: unknown field 'batch_sz'"});
}

TEST(CliErgonomics, RecipeShowAndDiff) {
  expect_output(rota("recipe show " + kTiny + " --set model.layers=3"), 0,
                {"# the resolved recipe of", "  layers: 3\n", "  ffn_activation: GELU\n"});
  const std::string rope = std::string(ROTA_SOURCE_DIR) + "/recipes/causal_lm/wikitext2_rope.txtpb";
  const std::string lrpe =
      std::string(ROTA_SOURCE_DIR) + "/recipes/causal_lm/wikitext2_lrpe_type2.txtpb";
  expect_output(rota("recipe diff " + lrpe + " " + rope), 0,
                {"9 fields differ", "  model.position.lrpe.p: HOUSEHOLDER → (unset)\n",
                 "  model.position.rope.base: (unset) → 10000\n"});
  expect_output(rota("recipe diff " + kTiny + " " + kTiny), 0, {"the recipes are the same"});
  testing::TempDir dir;
  const std::string run = (dir / "run").string();
  ASSERT_EQ(rota("train " + kTiny + " --out " + run + " --set train.steps=2").code, 0);
  expect_output(rota("recipe diff " + run + " " + kTiny), 0,
                {"1 field differs", "  train.steps: 2 → 20\n"});
  expect_output(rota("recipe show nosuch.txtpb"), 2, {"nosuch.txtpb: cannot open the file"});
}

TEST(CliErgonomics, ResumeExtendsAFinishedRunBitExactly) {
  testing::TempDir dir;
  const std::string extended = (dir / "extended").string();
  const std::string straight = (dir / "straight").string();
  ASSERT_EQ(rota("train " + kTiny + " --out " + extended + " --set train.steps=4").code, 0);
  const testing::CommandResult more =
      rota("train " + kTiny + " --out " + extended + " --set train.steps=6 --resume");
  expect_output(more, 0,
                {"--resume: extending the run from 4 steps to 6 steps", "continuing at step 5/6",
                 "step=6 run="});
  const testing::CommandResult once =
      rota("train " + kTiny + " --out " + straight + " --set train.steps=6");
  ASSERT_EQ(once.code, 0) << once.output;
  // A constant schedule and bit-exact resume: the same numbers as one 6-step run.
  const std::string loss = once.output.substr(once.output.rfind("loss="), 16);
  EXPECT_NE(more.output.find(loss), std::string::npos) << loss << "\n" << more.output;
  // Shorter is not an extension; a decaying schedule's treatment is said.
  expect_output(rota("train " + kTiny + " --out " + extended + " --set train.steps=5 --resume"), 2,
                {"--resume: the recipe differs", "steps: 6"});
  const std::string cosine = (dir / "cosine").string();
  const std::string kind = " --set schedule.kind=COSINE --set schedule.warmup_steps=1";
  ASSERT_EQ(rota("train " + kTiny + " --out " + cosine + kind + " --set train.steps=3").code, 0);
  expect_output(
      rota("train " + kTiny + " --out " + cosine + kind + " --set train.steps=5 --resume"), 0,
      {"extending the run from 3 steps to 5 steps; the COSINE schedule is recomputed"});
}

TEST(CliErgonomics, AMisspeltCorpusNamesTheClosestOne) {
  expect_output(rota("data fetch wikitext2"), 2,
                {"unknown corpus 'wikitext2' (did you mean 'wikitext-2'?)"});
}

TEST(CliErgonomics, VersionNamesTheCommitAndTheBuild) {
  const testing::CommandResult r = rota("--version");
  expect_output(r, 0, {"rota 0.1.0 (git ", "build ", "MPI "});
}

TEST(CliErgonomics, TheResumeLineRepeatsTheCommandAsInvoked) {
  testing::TempDir dir;
  const std::string run = (dir / "run").string();
  expect_output(rota("train " + kTiny + " --out " + run + " --stop-after 1 --set train.seed=3"), 0,
                {"continue with: " + testing::built_rota() + " train " + kTiny +
                 " --set 'train.seed=3' --out " + run + " --resume"});
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
