// End-to-end runs on users' own files (data.files): a classifier on CSV with string labels, a
// causal LM on JSON Lines with a held-out validation split, and data refused before training.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "app/run/eval_run.h"
#include "app/run/exit_codes.h"
#include "app/run/train_run.h"
#include "framework/base/file_io.h"
#include "tests/support/run_metrics.h"
#include "tests/support/temp_dir.h"

namespace rota::app {
namespace ROTA_TEST_FILE_NS {

namespace fs = std::filesystem;
using rota::testing::metrics_lines;
using rota::testing::TempDir;

constexpr const char* kModel =
    "  width: 32 layers: 1 heads: 2 dropout: 0.0\n"
    "  attention { linear {} }\n"
    "  position { lrpe { type: 2 p: HOUSEHOLDER } }\n";

void write(const fs::path& path, const std::string& bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << bytes;
}

// Trains the recipe text; returns the exit code and what went to stderr.
std::pair<int, std::string> train_run(const fs::path& dir, const std::string& recipe) {
  write(dir / "recipe.txtpb", recipe);
  TrainRequest request;
  request.recipe = (dir / "recipe.txtpb").string();
  request.out = (dir / "run").string();
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  int code = kExitOk;
  std::string message;
  try {
    code = run_training(request);
  } catch (const std::exception& e) {  // one process: errors leave run_training as exceptions
    code = exit_code_of(e);
    message = e.what();
  }
  const std::string err = ::testing::internal::GetCapturedStderr() + message;
  ::testing::internal::GetCapturedStdout();
  return {code, err};
}

// A CSV row with RFC 4180 quoting.
std::string csv_row(const std::string& text, const std::string& label) {
  std::string quoted = "\"";
  for (const char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"," + label + "\r\n";
}

std::string classifier_recipe(const fs::path& dir, const std::string& extra) {
  return "version: 1\nname: \"csv\"\nmodel {\n  kind: CLASSIFIER\n" + std::string(kModel) +
         "  classifier { num_classes: 2 }\n}\n"
         "data {\n  files { train: \"" +
         (dir / "train.csv").string() + "\" valid: \"" + (dir / "valid.csv").string() +
         "\" text_field: \"review\" label_field: \"sentiment\" " + extra +
         "}\n  tokenizer { kind: BYTE }\n  sequence_length: 32\n  batch_size: 4\n}\n"
         "schedule { kind: CONSTANT lr: 3e-3 }\n"
         "train { steps: 4 eval_every: 2 log_every: 2 tensorboard: false }\n";
}

TEST(FileSources, ClassifierOnQuotedCsvWithStringLabelsTrainsAndEvaluates) {
  TempDir tmp;
  std::string train = "review,sentiment\r\n", valid = "review,sentiment\r\n";
  const char* good[] = {"great, truly great", "loved \"every\" minute", "a joy,\nstart to end"};
  const char* bad[] = {"dull, so dull", "I \"hated\" it", "two\nlines, both bad"};
  for (int i = 0; i < 24; ++i)
    train += csv_row(i % 2 ? good[i % 3] : bad[i % 3], i % 2 ? "pos" : "neg");
  for (int i = 0; i < 6; ++i)
    valid += csv_row(i % 2 ? good[i % 3] : bad[i % 3], i % 2 ? "pos" : "neg");
  write(tmp / "train.csv", train);
  write(tmp / "valid.csv", valid);
  const auto [code, err] = train_run(tmp.path(), classifier_recipe(tmp.path(), ""));
  ASSERT_EQ(code, kExitOk) << err;
  // Sorted distinct training labels; saved with the run and every checkpoint.
  const nlohmann::json labels = nlohmann::json::parse(read_file(tmp / "run/labels.json"));
  EXPECT_EQ(labels["labels"], nlohmann::json({"neg", "pos"}));
  for (const char* step : {"step_000002", "step_000004"}) {
    EXPECT_EQ(read_file(tmp / "run/checkpoints" / step / "labels.json"),
              read_file(tmp / "run/labels.json"));
  }
  const auto valid_lines = metrics_lines(tmp / "run", "valid");
  ASSERT_EQ(valid_lines.size(), 2u);
  EXPECT_EQ(valid_lines.back()["examples"], 6);  // the two-line records count once each

  // Evaluation reads the saved mapping: a label outside it names file:line and the labels.
  write(tmp / "valid.csv", "review,sentiment\n\"fine\",pos\n\"meh\",neutral\n");
  EvalRequest eval;
  eval.checkpoint = (tmp / "run").string();
  eval.split = "valid";
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  int eval_code = kExitOk;
  std::string eval_message;
  try {
    eval_code = run_evaluation(eval);
  } catch (const std::exception& e) {
    eval_code = exit_code_of(e);
    eval_message = e.what();
  }
  const std::string eval_err = ::testing::internal::GetCapturedStderr() + eval_message;
  const std::string eval_out = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(eval_code, kExitFailure) << eval_out;
  EXPECT_NE(eval_err.find((tmp / "valid.csv").string() + ":3: label \"neutral\""),
            std::string::npos)
      << eval_err;
  EXPECT_NE(eval_err.find("\"neg\", \"pos\""), std::string::npos) << eval_err;
}

TEST(FileSources, ExplicitLabelsSetTheClassIdsAndMustCoverTheData) {
  TempDir tmp;
  std::string rows = "review,sentiment\n";
  for (int i = 0; i < 8; ++i) rows += csv_row("text " + std::to_string(i), i % 2 ? "pos" : "neg");
  write(tmp / "train.csv", rows);
  write(tmp / "valid.csv", rows);
  auto [code, err] =
      train_run(tmp.path(), classifier_recipe(tmp.path(), "labels: [\"pos\", \"neg\"] "));
  ASSERT_EQ(code, kExitOk) << err;
  EXPECT_EQ(nlohmann::json::parse(read_file(tmp / "run/labels.json"))["labels"],
            nlohmann::json({"pos", "neg"}));
  write(tmp / "valid.csv", rows + csv_row("odd", "maybe"));
  fs::remove_all(tmp / "run");
  std::tie(code, err) =
      train_run(tmp.path(), classifier_recipe(tmp.path(), "labels: [\"pos\", \"neg\"] "));
  EXPECT_EQ(code, kExitFailure);
  EXPECT_NE(err.find((tmp / "valid.csv").string() + ":10: label \"maybe\""), std::string::npos)
      << err;
  EXPECT_FALSE(fs::exists(tmp / "run/checkpoints")) << "refused before training";
}

TEST(FileSources, CausalLmOnJsonLinesHoldsOutItsValidationRecords) {
  TempDir tmp;
  std::string jsonl, valid_text;
  for (int i = 0; i < 200; ++i) {
    const std::string text = "record " + std::to_string(i) + " says \"hi\"";
    jsonl += nlohmann::json({{"id", i}, {"doc", {{"body", text}}}}).dump() + "\n";
    if (i >= 190) valid_text += text + "\n";  // floor(200 * 0.05) = 10 records held out
  }
  write(tmp / "corpus/part-1.jsonl", jsonl);
  const std::string recipe =
      "version: 1\nname: \"jsonl\"\nmodel {\n  kind: CAUSAL_LM\n" + std::string(kModel) +
      "}\ndata {\n  files { train: \"" + (tmp / "corpus/*.jsonl").string() +
      "\" text_field: \"doc.body\" }\n  tokenizer { kind: BYTE }\n  sequence_length: 16\n"
      "  batch_size: 4\n}\nschedule { kind: CONSTANT lr: 3e-3 }\n"
      "train { steps: 6 eval_every: 3 log_every: 3 tensorboard: false }\n";
  const auto [code, err] = train_run(tmp.path(), recipe);
  ASSERT_EQ(code, kExitOk) << err;
  const auto valid_lines = metrics_lines(tmp / "run", "valid");
  ASSERT_EQ(valid_lines.size(), 2u);
  // Bytes are tokens; evaluation scores every token after the first.
  EXPECT_EQ(valid_lines.back()["tokens"], static_cast<int64_t>(valid_text.size()) - 1);
  EXPECT_LT(valid_lines.back()["loss"].get<double>(), std::log(256.0));
}

TEST(FileSources, CharacterMissingFromTheVocabularyIsRefusedBeforeTraining) {
  TempDir tmp;
  write(tmp / "text/train.txt", "hello world\nabc def\n");
  write(tmp / "text/valid.txt", "hello\nwor\xC3\xA9ld\n");
  const std::string recipe =
      "version: 1\nname: \"char\"\nmodel {\n  kind: CAUSAL_LM\n" + std::string(kModel) +
      "}\ndata {\n  text_dir: \"" + (tmp / "text").string() +
      "\"\n  tokenizer { kind: CHAR }\n  sequence_length: 4\n  batch_size: 2\n}\n"
      "train { steps: 4 tensorboard: false }\n";
  const auto [code, err] = train_run(tmp.path(), recipe);
  EXPECT_EQ(code, kExitFailure);
  EXPECT_NE(err.find((tmp / "text/valid.txt").string() + ":2:4: character 'é' (U+00E9) of the "
                                                         "valid split"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("<unk>"), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(tmp / "run/checkpoints")) << "refused before training";
}

TEST(FileSources, TextDirGivenJsonLinesIsRefusedWithAHint) {
  TempDir tmp;
  write(tmp / "json/train.jsonl", "{\"text\": \"a\"}\n");
  const auto recipe = [&](const fs::path& text_dir) {
    return "version: 1\nmodel {\n  kind: CAUSAL_LM\n" + std::string(kModel) +
           "}\ndata {\n  text_dir: \"" + text_dir.string() +
           "\"\n  tokenizer { kind: BYTE }\n}\ntrain { steps: 1 }\n";
  };
  // The file itself: the recipe is refused, at the field.
  auto [code, err] = train_run(tmp.path(), recipe(tmp / "json/train.jsonl"));
  EXPECT_EQ(code, kExitUsage);
  EXPECT_NE(err.find("data.text_dir: '" + (tmp / "json/train.jsonl").string() +
                     "' is JSON/CSV/TSV data, but text_dir reads running text"),
            std::string::npos)
      << err;
  // A directory holding only train.jsonl: refused when the data is opened.
  std::tie(code, err) = train_run(tmp.path(), recipe(tmp / "json"));
  EXPECT_EQ(code, kExitFailure);
  EXPECT_NE(err.find("train.jsonl is JSON, but a text corpus directory reads running text"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("format: JSONL"), std::string::npos) << err;
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::app
