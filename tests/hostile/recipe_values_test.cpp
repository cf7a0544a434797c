// Hostile recipe values: each is refused at load time with exit code 2, file:line:col and the
// field path, before anything is built (non-finite numbers, absurd epochs, threads, a value of
// the wrong type, a directory as the recipe, a tokenizer file of another kind than `kind`); a
// UTF-8 byte order mark is accepted.
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "framework/base/file_io.h"
#include "tests/hostile/hostile_support.h"
#include "tests/support/program.h"
#include "tests/support/source_tree.h"
#include "tests/support/temp_dir.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

namespace fs = std::filesystem;
using hostile::expect_refused;
const std::string& kTiny = hostile::kTinyRecipe;

/// The tiny recipe with `from` replaced by `to` (which must occur), written as `name`.
fs::path variant(const testing::TempDir& dir, const std::string& name, const std::string& from,
                 const std::string& to) {
  std::string text = read_file(kTiny);
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  const fs::path path = dir / name;
  std::ofstream(path) << text;
  return path;
}

testing::CommandResult train(const testing::TempDir& dir, const fs::path& recipe,
                             const std::string& extra = "") {
  return testing::run_command("cd " + dir.path().string() + " && OMP_NUM_THREADS=1 timeout 60 " +
                              testing::built_rota() + " train " + recipe.string() + " --out " +
                              (dir / "run").string() + " " + extra);
}

TEST(HostileRecipeValues, NonFiniteNumbersInTheFileAreRefusedWhereTheyAre) {
  testing::TempDir dir;
  expect_refused(train(dir, variant(dir, "lr.txtpb", "lr: 3e-3", "lr: inf")),
                 {"lr.txtpb:20:27: schedule.lr: must be a finite number (got inf)"});
  expect_refused(train(dir, variant(dir, "init.txtpb", "width: 32", "width: 32\n  init_std: -inf")),
                 {"init.txtpb:7:3: model.init_std: must be a finite number (got -inf)"});
  expect_refused(train(dir, variant(dir, "nan.txtpb", "dropout: 0.0", "dropout: nan")),
                 {"model.dropout: must be a finite number (got nan)"});
  EXPECT_FALSE(fs::exists(dir / "run" / "checkpoints"));
}

TEST(HostileRecipeValues, AbsurdEpochsAreRefusedNotTrainedForOneStep) {
  testing::TempDir dir;
  expect_refused(train(dir, variant(dir, "epochs.txtpb", "steps: 20", "epochs: 1e300")),
                 {"epochs.txtpb:22:3: train.epochs: must be in (0, 1e+06] (got 1e+300)"});
}

TEST(HostileRecipeValues, ThreadsAreBounded) {
  testing::TempDir dir;
  expect_refused(train(dir, variant(dir, "threads.txtpb", "seed: 1", "seed: 1\n  threads: 100000")),
                 {"train.threads", "100000"});
}

TEST(HostileRecipeValues, AWrongValueNamesTheFieldNotItsBlock) {
  testing::TempDir dir;
  expect_refused(train(dir, variant(dir, "width.txtpb", "width: 32", "width: abc")),
                 {"width.txtpb:6:10: model.width: Expected integer, got: abc"});
}

TEST(HostileRecipeValues, ADirectoryIsNotARecipe) {
  testing::TempDir dir;
  fs::create_directory(dir / "recipe.txtpb");
  expect_refused(train(dir, dir / "recipe.txtpb"), {"recipe.txtpb: is a directory, not a recipe"});
}

TEST(HostileRecipeValues, ATokenizerFileOfAnotherKindIsRefused) {
  testing::TempDir dir;
  const std::string hf = std::string(ROTA_SOURCE_DIR) + "/tests/golden/tokenizers/gpt2_bpe.json";
  expect_refused(
      train(dir, fs::path(kTiny), "--set 'data.tokenizer={kind: WORD path: \"" + hf + "\"}'"),
      {"data.tokenizer.kind: WORD, but data.tokenizer.path", "HUGGINGFACE"});
  EXPECT_FALSE(fs::exists(dir / "run" / "checkpoints"));
}

TEST(HostileRecipeValues, HugeIdentifiersAndDeepNestingAreErrorsNotCrashes) {
  // Both once crashed the reader (std::regex's recursion on a long identifier, protobuf's on
  // deep nesting): each is now a located error, exit 2.
  testing::TempDir dir;
  const fs::path longid = dir / "longid.txtpb";
  std::ofstream(longid) << "version: 1\n" << std::string(200000, 'a') << ": 1\n";
  expect_refused(train(dir, longid),
                 {"longid.txtpb:2:1: aaaa", "(200000 characters): unknown field"});
  const fs::path deep = dir / "deep.txtpb";
  {
    std::ofstream out(deep);
    out << "version: 1\nmodel ";
    for (int i = 0; i < 5000; ++i) out << "{ a ";
    for (int i = 0; i < 5000; ++i) out << "}";
  }
  expect_refused(train(dir, deep), {"deep.txtpb:2:", "nested more than 32 levels deep"});
}

TEST(HostileRecipeValues, AUtf8ByteOrderMarkIsAccepted) {
  testing::TempDir dir;
  const fs::path path = dir / "bom.txtpb";
  std::ofstream(path) << "\xEF\xBB\xBF" << read_file(kTiny);
  const testing::CommandResult r = train(dir, path, "--set train.steps=1");
  EXPECT_EQ(r.code, 0) << r.output;
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
