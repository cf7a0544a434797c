// `rota predict` on a classifier trained on CSV with string labels: label names, inputs in every
// format, fields from the run's recipe.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "app/run/eval_run.h"
#include "app/run/exit_codes.h"
#include "app/run/predict_run.h"
#include "app/run/train_run.h"
#include "app/tasks/checkpoint_task.h"
#include "app/tasks/classifier_task.h"
#include "framework/autograd/grad_mode.h"
#include "framework/base/file_io.h"
#include "tests/support/temp_dir.h"

namespace rota::app {
namespace ROTA_TEST_FILE_NS {

namespace fs = std::filesystem;
using nlohmann::json;
using rota::testing::TempDir;

void write(const fs::path& path, const std::string& bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << bytes;
}

// A classifier on review,sentiment CSV whose class ids are given in the recipe: pos = 0, neg = 1.
fs::path train_csv_classifier(const fs::path& dir, bool explicit_labels = true) {
  std::string train = "review,sentiment\n";
  const char* good[] = {"great, truly great", "loved \"\"every\"\" minute", "a joy"};
  const char* bad[] = {"dull, so dull", "hated it", "both bad"};
  for (int i = 0; i < 24; ++i) {
    train += std::string("\"") + (i % 2 ? good[i % 3] : bad[i % 3]) + "\"," +
             (i % 2 ? "pos" : "neg") + "\n";
  }
  write(dir / "train.csv", train);
  write(dir / "recipe.txtpb",
        "version: 1\nname: \"csv\"\nmodel {\n  kind: CLASSIFIER\n  width: 32 layers: 1 heads: 2 "
        "dropout: 0.0\n  attention { linear {} }\n  position { lrpe { type: 2 p: HOUSEHOLDER } "
        "}\n  classifier { num_classes: 2 }\n}\ndata {\n  files { train: \"" +
            (dir / "train.csv").string() + "\" text_field: \"review\" label_field: \"sentiment\" " +
            (explicit_labels ? "labels: [\"pos\", \"neg\"]" : "") +
            " }\n"
            "  tokenizer { kind: BYTE }\n  sequence_length: 32\n  batch_size: 4\n}\n"
            "schedule { kind: CONSTANT lr: 3e-3 }\n"
            "train { steps: 3 eval_every: 0 log_every: 1 tensorboard: false }\n");
  TrainRequest request;
  request.recipe = (dir / "recipe.txtpb").string();
  request.out = (dir / "run").string();
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  const int code = run_training(request);
  ::testing::internal::GetCapturedStderr();
  ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(code, kExitOk);
  return dir / "run";
}

std::vector<json> predict(const fs::path& run, const fs::path& input, const std::string& field,
                          const fs::path& output) {
  PredictRequest request;
  request.checkpoint = run.string();
  request.input = input.string();
  request.output = output.string();
  request.text_field = field;
  ::testing::internal::CaptureStderr();
  const int code = run_prediction(request);
  ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(code, kExitOk);
  std::vector<json> records;
  std::istringstream lines(read_file(output));
  for (std::string line; std::getline(lines, line);) records.push_back(json::parse(line));
  return records;
}

TEST(PredictLabels, NamesComeFromTheRunsMappingForEveryInputFormat) {
  TempDir tmp;
  const fs::path run = train_csv_classifier(tmp.path());
  // The same three texts as CSV (the run's column), JSONL (another field) and text lines.
  write(tmp / "in.csv", "id,review\n1,\"great, truly great\"\n2,\"multi\nline\"\n3,hated it\n");
  write(tmp / "in.jsonl",
        "{\"body\": \"great, truly great\"}\n\n{\"body\": \"multi\\nline\"}\n{\"body\": \"hated "
        "it\"}\n");
  write(tmp / "in.txt", "great, truly great\nmulti\nline\nhated it\n");
  const std::vector<json> csv = predict(run, tmp / "in.csv", "", tmp / "csv.jsonl");
  const std::vector<json> jsonl = predict(run, tmp / "in.jsonl", "body", tmp / "jl.jsonl");
  const std::vector<json> text = predict(run, tmp / "in.txt", "", tmp / "txt.jsonl");
  ASSERT_EQ(csv.size(), 3u);
  ASSERT_EQ(jsonl.size(), 3u);
  ASSERT_EQ(text.size(), 4u);  // "multi" and "line" are two lines of text
  EXPECT_EQ(csv[0]["line"], 2);
  EXPECT_EQ(csv[1]["line"], 3);
  EXPECT_EQ(csv[2]["line"], 5);
  EXPECT_EQ(jsonl[1]["line"], 3);  // the blank line 2 is no record
  for (const std::vector<json>* records : {&csv, &jsonl, &text}) {
    for (const json& record : *records) {
      const json& p = record["probabilities"];
      ASSERT_TRUE(p.contains("pos") && p.contains("neg")) << record;
      EXPECT_NEAR(p["pos"].get<double>() + p["neg"].get<double>(), 1.0, 1e-9);
      // Class 0 is "pos" (the recipe's labels list), and the label is the likelier one.
      const int64_t best = p["pos"].get<double>() >= p["neg"].get<double>() ? 0 : 1;
      EXPECT_EQ(record["class"], best) << record;
      EXPECT_EQ(record["label"], best == 0 ? "pos" : "neg") << record;
    }
  }
  // The same text gives the same probabilities whatever the format.
  EXPECT_NEAR(csv[0]["probabilities"]["pos"].get<double>(),
              jsonl[0]["probabilities"]["pos"].get<double>(), 1e-6);
  EXPECT_NEAR(csv[1]["probabilities"]["pos"].get<double>(),
              jsonl[1]["probabilities"]["pos"].get<double>(), 1e-6);
  EXPECT_NEAR(csv[2]["probabilities"]["pos"].get<double>(),
              text[3]["probabilities"]["pos"].get<double>(), 1e-6);

  // "pos" is class 0 of the model: the softmax of its logits for "hated it", alone.
  CheckpointTask loaded = load_checkpoint_task(run.string());
  auto& task = dynamic_cast<ClassifierTask&>(*loaded.task);
  NoGradGuard no_grad;
  std::vector<int64_t> ids = {task.tokenizer().specials().id(data::SpecialToken::kCls)};
  for (int64_t id : task.tokenizer().encode("hated it")) ids.push_back(id);
  const int64_t n = static_cast<int64_t>(ids.size());
  Tensor tokens = Tensor::empty({1, n}, DType::kI64);
  Tensor mask = Tensor::empty({1, n}, DType::kF32);
  for (int64_t k = 0; k < n; ++k) {
    tokens.data<int64_t>()[k] = ids[static_cast<size_t>(k)];
    mask.data<float>()[k] = 1.0f;
  }
  const Tensor logits = task.classifier().forward(tokens, mask).data().contiguous();
  const double l0 = logits.data<float>()[0], l1 = logits.data<float>()[1];
  EXPECT_NEAR(csv[2]["probabilities"]["pos"].get<double>(),
              std::exp(l0) / (std::exp(l0) + std::exp(l1)), 1e-5);
}

// `rota eval --data` on a labelled CSV agrees with the labels `rota predict` gives the same rows.
TEST(PredictLabels, EvalOnOtherDataAgreesWithPredictions) {
  TempDir tmp;
  const fs::path run = train_csv_classifier(tmp.path());
  std::string rows = "review,sentiment\n";
  const char* texts[] = {"great", "dull", "a joy, truly", "so bad", "loved it", "hated, hated",
                         "fine",  "meh",  "wonderful",    "awful",  "ok",       "superb"};
  std::vector<std::string> truth;
  for (int i = 0; i < 12; ++i) {
    truth.push_back(i % 3 == 0 ? "neg" : "pos");
    rows += std::string("\"") + texts[i] + "\"," + truth.back() + "\n";
  }
  write(tmp / "other.csv", rows);
  const std::vector<json> predicted = predict(run, tmp / "other.csv", "", tmp / "p.jsonl");
  ASSERT_EQ(predicted.size(), truth.size());
  int correct = 0;
  for (size_t i = 0; i < truth.size(); ++i) correct += predicted[i]["label"] == truth[i];
  EvalRequest eval;
  eval.checkpoint = run.string();
  eval.data = (tmp / "other.csv").string();
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  const int code = run_evaluation(eval);
  ::testing::internal::GetCapturedStderr();
  const std::string line = ::testing::internal::GetCapturedStdout();
  ASSERT_EQ(code, kExitOk);
  const size_t at = line.find(" accuracy=");
  ASSERT_NE(at, std::string::npos) << line;
  EXPECT_NEAR(std::stod(line.substr(at + 10)), correct / 12.0, 1e-5) << line;
  EXPECT_NE(line.find(" examples=12"), std::string::npos) << line;
}

// Predicting needs the run, not its training files: the labels come from the checkpoint's
// labels.json (derived from the training labels: sorted, neg = 0, pos = 1).
TEST(PredictLabels, TheTrainingFilesAreNotNeeded) {
  TempDir tmp;
  const fs::path run = train_csv_classifier(tmp.path(), /*explicit_labels=*/false);
  fs::rename(tmp / "train.csv", tmp / "elsewhere.csv");
  write(tmp / "in.txt", "great\nhated it\n");
  const std::vector<json> records = predict(run, tmp / "in.txt", "", tmp / "out.jsonl");
  ASSERT_EQ(records.size(), 2u);
  for (const json& record : records) {
    const int64_t best =
        record["probabilities"]["neg"].get<double>() >= record["probabilities"]["pos"].get<double>()
            ? 0
            : 1;
    EXPECT_EQ(record["class"], best) << record;
    EXPECT_EQ(record["label"], best == 0 ? "neg" : "pos") << record;
  }
}

TEST(PredictLabels, BadInputNamesTheFileAndLine) {
  TempDir tmp;
  const fs::path run = train_csv_classifier(tmp.path());
  write(tmp / "bad.jsonl", "{\"body\": \"fine\"}\n{\"text\": \"no body\"}\n");
  PredictRequest request;
  request.checkpoint = run.string();
  request.input = (tmp / "bad.jsonl").string();
  request.text_field = "body";
  ::testing::internal::CaptureStderr();
  try {
    run_prediction(request);
    ADD_FAILURE() << "expected an error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find((tmp / "bad.jsonl").string() + ":2"), std::string::npos)
        << e.what();
  }
  ::testing::internal::GetCapturedStderr();
  write(tmp / "nul.txt", std::string("ok\nbad\0byte\n", 12));
  request.input = (tmp / "nul.txt").string();
  request.text_field = "";
  ::testing::internal::CaptureStderr();
  try {
    run_prediction(request);
    ADD_FAILURE() << "expected an error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find((tmp / "nul.txt").string() + ":2"), std::string::npos)
        << e.what();
  }
  ::testing::internal::GetCapturedStderr();
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::app
