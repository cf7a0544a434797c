// docs/data.md, "Your own files" and "Evaluation and prediction on any data": every recipe and
// `rota` command of the worked examples runs as written, in order, on generated files.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/program.h"
#include "tests/support/source_tree.h"
#include "tests/support/temp_dir.h"

namespace ROTA_TEST_FILE_NS {

namespace fs = std::filesystem;
using rota::testing::CommandResult;
using rota::testing::run_command;
using rota::testing::TempDir;

const std::string kSource = ROTA_SOURCE_DIR;

// One step of the documented walk-through: a recipe file to write, or a command to run.
struct DocStep {
  std::string recipe_file;  // set for a recipe block
  std::string text;         // the recipe, or the command (without "rota ")
};

// The code blocks from "### Worked examples" to the next "## " after "Evaluation and
// prediction": recipe blocks (starting "version: 1") named by the last `NAME.txtpb` mentioned
// before them, and `rota ...` lines.
std::vector<DocStep> documented_steps() {
  std::ifstream in(kSource + "/docs/data.md");
  std::string line, recipe_name, block;
  bool started = false, in_block = false, past_prediction = false;
  std::vector<DocStep> steps;
  while (std::getline(in, line)) {
    if (line == "### Worked examples") started = true;
    if (!started) continue;
    if (line.rfind("## Evaluation and prediction", 0) == 0) past_prediction = true;
    if (!in_block && line.rfind("## ", 0) == 0 && past_prediction &&
        line.rfind("## Evaluation", 0) != 0) {
      break;
    }
    if (line == "```") {
      if (in_block && block.rfind("version: 1", 0) == 0) steps.push_back({recipe_name, block});
      in_block = !in_block;
      block.clear();
      continue;
    }
    if (in_block) {
      if (line.rfind("rota ", 0) == 0) steps.push_back({"", line.substr(5)});
      block += line + "\n";
      continue;
    }
    const size_t end = line.find(".txtpb`");
    if (end != std::string::npos) {
      const size_t begin = line.rfind('`', end);
      recipe_name = line.substr(begin + 1, end + 5 - begin);
    }
  }
  return steps;
}

void write(const fs::path& path, const std::string& bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << bytes;
}

// Sentences over a small fixed alphabet (so a CHAR vocabulary built from train covers valid).
std::string sentence(int i) {
  const char* words[] = {"the", "cat", "sat", "on", "a", "mat", "and", "dog", "ran", "far"};
  std::string text;
  for (int w = 0; w < 6 + i % 5; ++w) {
    if (w > 0) text += ' ';
    text += words[(i * 7 + w) % 10];
  }
  return text;
}

// The files the examples name.
void write_example_data(const fs::path& dir) {
  std::string part1, part2, valid, jsonl, csv = "review,sentiment\n", tsv;
  for (int i = 0; i < 300; ++i) (i % 2 ? part1 : part2) += sentence(i) + "\n";
  for (int i = 0; i < 60; ++i) valid += sentence(i + 1000) + "\n";
  for (int i = 0; i < 400; ++i) {
    jsonl += nlohmann::json({{"id", i}, {"doc", {{"body", sentence(i)}}}}).dump() + "\n";
  }
  for (int i = 0; i < 80; ++i) {
    csv += '"';
    csv += sentence(i);
    csv += i % 2 ? ", truly \"\"great\"\"\",pos\n" : ", so dull\",neg\n";
  }
  write(dir / "corpus/part-1.txt", part1);
  write(dir / "corpus/part-2.txt", part2);
  write(dir / "valid.txt", valid);
  write(dir / "data/train.jsonl", jsonl);
  write(dir / "train.csv", csv);
  write(dir / "valid.csv", csv);
  write(dir / "test.csv", csv);
  for (const char* split : {"train", "dev"}) {
    tsv = "premise\thypothesis\tlabel\n";
    for (int i = 0; i < 60; ++i) {
      tsv += sentence(i) + "\t" + sentence(i + 3) + "\t" + std::to_string(i % 3) + "\n";
    }
    write(dir / "tsv" / split / "a.tsv", tsv);
  }
  write(dir / "more_text/one.txt", valid);
  write(dir / "more_text/two.txt", part1.substr(0, 2000));
  write(dir / "unlabelled.csv",
        "id,review\n1,\"" + sentence(3) + "\"\n2,\"a joy, \"\"truly\"\"\"\n");
  write(dir / "lines.txt", sentence(5) + "\n" + sentence(6) + "\n");
}

TEST(OwnDataDocs, EveryWorkedExampleAndCommandRuns) {
  const std::vector<DocStep> steps = documented_steps();
  int recipes = 0, commands = 0;
  for (const DocStep& step : steps) (step.recipe_file.empty() ? commands : recipes)++;
  ASSERT_EQ(recipes, 4) << "docs/data.md: the worked examples changed";
  ASSERT_EQ(commands, 9) << "docs/data.md: the worked examples' commands changed";
  TempDir tmp;
  write_example_data(tmp.path());
  for (const DocStep& step : steps) {
    if (!step.recipe_file.empty()) {
      write(tmp / step.recipe_file, step.text);
      continue;
    }
    const CommandResult r =
        run_command("cd '" + tmp.path().string() + "' && '" + rota::testing::built_rota() + "' " +
                    step.text + " </dev/null");
    ASSERT_EQ(r.code, 0) << step.text << "\n" << r.output;
  }
  // What the last commands wrote: one prediction per unlabelled row, with the label names.
  std::ifstream predictions(tmp / "predictions.jsonl");
  std::string line;
  int rows = 0;
  while (std::getline(predictions, line)) {
    const nlohmann::json record = nlohmann::json::parse(line);
    EXPECT_TRUE(record["label"] == "neg" || record["label"] == "pos") << line;
    ++rows;
  }
  EXPECT_EQ(rows, 2);
}

}  // namespace ROTA_TEST_FILE_NS
