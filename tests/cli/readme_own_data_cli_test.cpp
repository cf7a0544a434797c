// README.md, "Train on your own data": the three commands run as written (cut down to a short
// training run) on generated files.
#include <filesystem>
#include <fstream>
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

// The `build/rota ...` lines of the README's "Train on your own data" block, comments removed.
std::vector<std::string> readme_commands() {
  std::ifstream in(kSource + "/README.md");
  std::string line;
  bool section = false, block = false;
  std::vector<std::string> commands;
  while (std::getline(in, line)) {
    if (line == "### Train on your own data") section = true;
    if (!section) continue;
    if (line.rfind("```", 0) == 0) {
      if (block) break;
      block = true;
      continue;
    }
    if (block && line.rfind("build/rota ", 0) == 0) {
      const size_t comment = line.find("  #");
      commands.push_back(line.substr(11, comment == std::string::npos ? comment : comment - 11));
    }
  }
  return commands;
}

TEST(ReadmeOwnData, TheThreeCommandsRun) {
  const std::vector<std::string> commands = readme_commands();
  ASSERT_EQ(commands.size(), 3u) << "README.md: the own-data block changed";
  TempDir tmp;
  const std::string text = "the cat sat on the mat\nthe dog ran far\n";
  for (const char* name : {"my_texts/a.txt", "my_texts/b.txt"}) {
    fs::create_directories((tmp / name).parent_path());
    std::ofstream(tmp / name) << [&] {
      std::string many;
      for (int i = 0; i < 400; ++i) many += text;
      return many;
    }();
  }
  fs::copy_file(kSource + "/tests/golden/tokenizers/gpt2_bpe.json", tmp / "tokenizer.json");
  std::ofstream(tmp / "new_examples.txt") << "the cat ran\nthe mat\n";
  // RECIPE: a shipped recipe. Each training command names its own run directory (a user's run
  // never lands in a shipped recipe's runs/<name>), which the predict command reads.
  const std::string recipe = kSource + "/recipes/causal_lm/wikitext2_lrpe_type2.txtpb";
  const std::string cut_down =
      " --set train.steps=2 --set schedule.warmup_steps=1 --set train.eval_batches=1"
      " --set model.layers=1 --set data.sequence_length=32 --set data.batch_size=4"
      " --set train.sample.tokens=2";
  for (size_t i = 0; i < commands.size(); ++i) {
    std::string command = commands[i];
    for (const auto& [from, to] :
         {std::pair<std::string, std::string>{"recipes/", kSource + "/recipes/"},
          {"RECIPE", recipe}}) {
      const size_t at = command.find(from);
      if (at != std::string::npos) command.replace(at, from.size(), to);
    }
    if (command.rfind("train ", 0) == 0) {
      EXPECT_NE(command.find(" --out runs/my-"), std::string::npos) << command;
      command += cut_down;
    }
    const CommandResult r =
        run_command("cd '" + tmp.path().string() + "' && '" + rota::testing::built_rota() + "' " +
                    command + " </dev/null");
    ASSERT_EQ(r.code, 0) << command << "\n" << r.output;
    if (i == 2) {
      EXPECT_NE(command.find("predict runs/my-texts "), std::string::npos) << command;
      EXPECT_NE(r.output.find("\"line\":2"), std::string::npos) << r.output;
    }
  }
  for (const char* run : {"runs/my-texts", "runs/my-tokenizer"}) {
    EXPECT_TRUE(fs::exists(tmp / run / "recipe.txtpb")) << run;
  }
}

}  // namespace ROTA_TEST_FILE_NS
