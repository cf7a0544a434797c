// The `rota data prepare / verify` commands of docs/data.md run as written (cut down: a short
// training run), and the command line's exit codes for prepare and verify.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/support/program.h"
#include "tests/support/source_tree.h"
#include "tests/support/temp_dir.h"

namespace ROTA_TEST_FILE_NS {

namespace fs = std::filesystem;
using rota::testing::CommandResult;
using rota::testing::run_command;
using rota::testing::TempDir;

const std::string kSource = ROTA_SOURCE_DIR;

// The `rota ...` lines between the prepared-commands markers of docs/data.md.
std::vector<std::string> documented_commands() {
  std::ifstream in(kSource + "/docs/data.md");
  std::string line;
  bool inside = false;
  std::vector<std::string> commands;
  while (std::getline(in, line)) {
    if (line.find("BEGIN PREPARED COMMANDS") != std::string::npos) inside = true;
    if (line.find("END PREPARED COMMANDS") != std::string::npos) inside = false;
    if (inside && line.rfind("rota ", 0) == 0) commands.push_back(line);
  }
  return commands;
}

CommandResult run_in(const fs::path& dir, const std::string& arguments) {
  return run_command("cd '" + dir.string() + "' && '" + rota::testing::built_rota() + "' " +
                     arguments + " </dev/null");
}

TEST(DataPrepareCli, TheDocumentedCommandsWork) {
  const std::vector<std::string> commands = documented_commands();
  ASSERT_EQ(commands.size(), 4u) << "docs/data.md: the prepared commands block changed";
  TempDir tmp;
  fs::create_directories(tmp / "my_texts");
  std::ofstream(tmp / "my_texts" / "a.txt") << "the cat sat on the mat\nthe dog ran\n";
  std::ofstream(tmp / "my_texts" / "b.txt") << "a new line of text\nand more text here\n";
  for (std::string command : commands) {
    command = command.substr(5);  // without "rota "
    // Recipes are in the source tree; the rest is relative to the working directory.
    for (size_t at = command.find("recipes/"); at != std::string::npos;
         at = command.find("recipes/", at + kSource.size() + 9)) {
      command.insert(at, kSource + "/");
    }
    if (command.rfind("train ", 0) == 0) {
      command +=
          " --out run --set train.steps=2 --set schedule.warmup_steps=1 --set train.eval_batches=1"
          " --set model.layers=1"
          " --set model.width=32 --set model.heads=2 --set model.ffn_width=64"
          " --set data.sequence_length=32 --set data.batch_size=4 --set train.sample.tokens=2";
    }
    const CommandResult r = run_in(tmp.path(), command);
    ASSERT_EQ(r.code, 0) << command << "\n" << r.output;
  }
  EXPECT_TRUE(fs::exists(tmp / "prepared" / "wikitext-2" / "manifest.json"));
  EXPECT_TRUE(fs::exists(tmp / "prepared" / "mine" / "train-00000.bin"));
  EXPECT_TRUE(fs::exists(tmp / "run" / "metrics.jsonl"));
}

TEST(DataPrepareCli, ExitCodes) {
  TempDir tmp;
  const std::string tiny = kSource + "/recipes/tests/tiny_causal_lm.txtpb";
  for (const char* help : {"data prepare --help", "data verify --help"}) {
    const CommandResult h = run_in(tmp.path(), help);
    EXPECT_EQ(h.code, 0) << h.output;
    EXPECT_NE(h.output.find("Usage"), std::string::npos) << h.output;
  }
  // Usage: no --out (2); neither a recipe nor --corpus/--tokenizer (2).
  EXPECT_EQ(run_in(tmp.path(), "data prepare " + tiny).code, 2);
  EXPECT_EQ(run_in(tmp.path(), "data prepare --out x").code, 2);
  CommandResult r = run_in(tmp.path(), "data prepare " + tiny + " --out p --shard-mb 1");
  ASSERT_EQ(r.code, 0) << r.output;
  // Not a TTY: one final progress line on stderr, no redrawn bar.
  EXPECT_NE(r.output.find("prepare: 1.1 MB in"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find('\r'), std::string::npos) << r.output;
  // A non-empty --out is refused without --force (a runtime failure: 1), replaced with it.
  r = run_in(tmp.path(), "data prepare " + tiny + " --out p");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("--force"), std::string::npos) << r.output;
  EXPECT_EQ(run_in(tmp.path(), "data prepare " + tiny + " --out p --force --threads 1").code, 0);
  r = run_in(tmp.path(), "data verify p");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("ok (3 shards"), std::string::npos) << r.output;
  // A flipped byte: verify fails naming the shard.
  {
    std::fstream shard(tmp / "p" / "valid-00000.bin",
                       std::ios::in | std::ios::out | std::ios::binary);
    shard.seekp(10);
    shard.put('\x7f');
  }
  r = run_in(tmp.path(), "data verify p");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("valid-00000.bin"), std::string::npos) << r.output;
  EXPECT_EQ(run_in(tmp.path(), "data verify nowhere").code, 1);
}

}  // namespace ROTA_TEST_FILE_NS
