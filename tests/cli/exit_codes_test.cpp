// The built `rota` program keeps the CLI contract: exit 0 / 1 / 2, errors on stderr, --help.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "tests/support/program.h"
#include "tests/support/source_tree.h"
#include "tests/support/temp_dir.h"

namespace ROTA_TEST_FILE_NS {

namespace fs = std::filesystem;

std::string rota() {
  return rota::testing::built_rota();
}

using Result = rota::testing::CommandResult;

Result run(const std::string& arguments) {
  return rota::testing::run_command(rota() + " " + arguments);
}

const std::string kTiny = std::string(ROTA_SOURCE_DIR) + "/recipes/tests/tiny_causal_lm.txtpb";

TEST(ExitCodes, HelpSucceedsOnEverySubcommand) {
  ASSERT_TRUE(fs::exists(rota())) << rota() << " missing: build the rota target";
  for (const char* sub :
       {"", "train", "eval", "generate", "bench train", "data list", "data fetch"}) {
    const Result r = run(std::string(sub) + " --help");
    EXPECT_EQ(r.code, 0) << sub << ": " << r.output;
    EXPECT_NE(r.output.find("Usage"), std::string::npos) << sub << ": " << r.output;
  }
}

TEST(ExitCodes, UsageAndRecipeErrorsAreTwo) {
  Result r = run("");
  EXPECT_EQ(r.code, 2) << r.output;
  r = run("frobnicate");
  EXPECT_EQ(r.code, 2) << r.output;
  r = run("train");  // missing RECIPE
  EXPECT_EQ(r.code, 2) << r.output;
  r = run("train " + kTiny + " --set model.widht=3");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("model.widht"), std::string::npos) << r.output;
  r = run("train /nonexistent/recipe.txtpb");
  EXPECT_EQ(r.code, 2) << r.output;
  r = run("data fetch no-such-corpus");
  EXPECT_EQ(r.code, 2) << r.output;
}

TEST(ExitCodes, RuntimeFailuresAreOne) {
  Result r = run("eval /nonexistent/run");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("/nonexistent/run"), std::string::npos) << r.output;

  // A checkpoint with one flipped byte is refused at load time, naming the file.
  const rota::testing::TempDir tmp;
  const fs::path dir = tmp / "run";
  r = run("train " + kTiny + " --stop-after 2 --out " + dir.string());
  ASSERT_EQ(r.code, 0) << r.output;
  const fs::path weights = dir / "checkpoints" / "step_000002" / "model.safetensors";
  {
    std::FILE* f = std::fopen(weights.c_str(), "r+b");
    ASSERT_NE(f, nullptr);
    std::fseek(f, -5, SEEK_END);
    const int byte = std::fgetc(f);
    std::fseek(f, -5, SEEK_END);
    std::fputc(byte ^ 0x10, f);
    std::fclose(f);
  }
  r = run("eval " + dir.string());
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("model.safetensors"), std::string::npos) << r.output;
}

}  // namespace ROTA_TEST_FILE_NS
