// `rota predict`: line scores equal the models' own losses; classifier probabilities.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "app/run/exit_codes.h"
#include "app/run/lm_line_scores.h"
#include "app/run/predict_run.h"
#include "app/run/train_run.h"
#include "app/tasks/causal_lm_task.h"
#include "app/tasks/checkpoint_task.h"
#include "app/tasks/classifier_task.h"
#include "app/tasks/masked_lm_task.h"
#include "data/dataset/lm_dataset.h"
#include "framework/autograd/grad_mode.h"
#include "framework/base/file_io.h"
#include "recipes/recipe_error.h"
#include "tests/support/source_tree.h"
#include "tests/support/temp_dir.h"

namespace rota::app {
namespace ROTA_TEST_FILE_NS {

namespace fs = std::filesystem;
using nlohmann::json;
using rota::testing::TempDir;

std::string recipe_path(const std::string& name) {
  return std::string(ROTA_SOURCE_DIR) + "/recipes/tests/" + name + ".txtpb";
}

void train_tiny(const std::string& recipe, const std::vector<std::string>& extra,
                const fs::path& out) {
  TrainRequest args;
  args.recipe = recipe_path(recipe);
  args.out = out.string();
  args.overrides = {"train.steps=3", "train.eval_every=0", "train.checkpoint_every=0",
                    "train.eval_batches=1"};
  args.overrides.insert(args.overrides.end(), extra.begin(), extra.end());
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  const int code = run_training(args);
  ::testing::internal::GetCapturedStderr();
  ::testing::internal::GetCapturedStdout();
  ASSERT_EQ(code, kExitOk) << recipe;
}

std::vector<json> predict(const fs::path& run, const fs::path& input, int64_t batch_size,
                          const fs::path& output, bool tokens = false) {
  PredictRequest request;
  request.checkpoint = run.string();
  request.input = input.string();
  request.output = output.string();
  request.batch_size = batch_size;
  request.token_details = tokens;
  ::testing::internal::CaptureStderr();
  const int code = run_prediction(request);
  ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(code, kExitOk);
  std::vector<json> records;
  std::istringstream lines(read_file(output));
  for (std::string line; std::getline(lines, line);) records.push_back(json::parse(line));
  return records;
}

// Σ over the targets of model.loss on the eval windows of `stream`: the summed negative
// log-likelihood `rota eval` would compute for a split holding exactly this stream.
double summed_causal_loss(const models::CausalLm& model, std::vector<int64_t> stream,
                          int64_t context) {
  const data::CausalLmDataset windows(data::make_token_stream(std::move(stream)), context,
                                      data::WindowMode::kEval, 0);
  double total = 0;
  for (int64_t w = 0; w < windows.size(); ++w) {
    const std::vector<int64_t> index = {w};
    const data::LmBatch batch = windows.batch(index);
    total += model.loss(batch.tokens, batch.targets).item() * batch.target_count;
  }
  return total;
}

// f throws a recipes::RecipeError (exit code 2) whose message contains `fragment`.
void expect_usage_error(const std::function<void()>& f, const std::string& fragment) {
  try {
    f();
    ADD_FAILURE() << "expected a RecipeError containing: " << fragment;
  } catch (const recipes::RecipeError& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

const std::vector<std::string> kLines = {
    "ROMEO: But soft, what light through yonder window breaks?", "",
    "It is the east, and Juliet is the sun. Arise, fair sun, and kill the envious moon, who is "
    "already sick and pale with grief.",
    "x"};

fs::path write_lines(const fs::path& path) {
  std::string text;
  for (const std::string& line : kLines) text += line + "\n";
  write_file_atomically(path, text);
  return path;
}

class CausalPredict : public ::testing::TestWithParam<const char*> {};

TEST_P(CausalPredict, LineScoresAreTheModelsLossOnTheLine) {
  TempDir dir;
  const fs::path run = dir.path() / "run";
  train_tiny("tiny_causal_lm", {std::string("data.tokenizer.kind=") + GetParam()}, run);
  const fs::path input = write_lines(dir.path() / "lines.txt");
  const std::vector<json> records = predict(run, input, 3, dir.path() / "out.jsonl", true);
  ASSERT_EQ(records.size(), kLines.size());

  CheckpointTask loaded = load_checkpoint_task(run.string());
  auto& task = dynamic_cast<CausalLmTask&>(*loaded.task);
  const data::Tokenizer& tokenizer = task.tokenizer();
  const data::SpecialTokens& specials = tokenizer.specials();
  NoGradGuard no_grad;
  for (size_t i = 0; i < kLines.size(); ++i) {
    const json& record = records[i];
    EXPECT_EQ(record["line"], static_cast<int64_t>(i + 1));
    std::vector<int64_t> stream = tokenizer.encode(kLines[i]);
    EXPECT_EQ(record["tokens"], static_cast<int64_t>(stream.size()));
    const bool lead = specials.has(data::SpecialToken::kEos);
    if (lead) stream.insert(stream.begin(), specials.id(data::SpecialToken::kEos));
    const int64_t targets = static_cast<int64_t>(stream.size()) - 1;
    EXPECT_EQ(record["scored"], std::max<int64_t>(targets, 0));
    if (targets <= 0) {
      EXPECT_TRUE(record["ppl"].is_null());
      continue;
    }
    // The recipe's context is 32: the long line spans several windows.
    const double expected = -summed_causal_loss(task.causal_lm(), stream, 32);
    const double got = record["logprob"].get<double>();
    EXPECT_NEAR(got, expected, 1e-4 * std::abs(expected)) << "line " << i;
    EXPECT_NEAR(record["ppl"].get<double>(), std::exp(-expected / targets),
                1e-4 * std::exp(-expected / targets));
    double listed = 0;
    for (const json& token : record["token_logprobs"]) {
      if (!token["logprob"].is_null()) listed += token["logprob"].get<double>();
    }
    EXPECT_NEAR(listed, got, 1e-9 * std::abs(got));
  }
  // The batch size only groups rows.
  const std::vector<json> one_by_one = predict(run, input, 1, dir.path() / "out1.jsonl");
  for (size_t i = 0; i < kLines.size(); ++i) {
    if (records[i]["scored"] == 0) continue;
    EXPECT_NEAR(one_by_one[i]["logprob"].get<double>(), records[i]["logprob"].get<double>(),
                1e-5 * std::abs(records[i]["logprob"].get<double>()));
  }
}

INSTANTIATE_TEST_SUITE_P(Tokenizers, CausalPredict, ::testing::Values("BYTE", "WORD"));

TEST(MaskedPredict, PseudoLogLikelihoodMasksEachOrdinaryTokenInTurn) {
  TempDir dir;
  const fs::path run = dir.path() / "run";
  train_tiny("tiny_masked_lm", {}, run);
  const fs::path input = write_lines(dir.path() / "lines.txt");
  const std::vector<json> records = predict(run, input, 7, dir.path() / "out.jsonl");
  ASSERT_EQ(records.size(), kLines.size());

  CheckpointTask loaded = load_checkpoint_task(run.string());
  auto& task = dynamic_cast<MaskedLmTask&>(*loaded.task);
  const data::Tokenizer& tokenizer = task.tokenizer();
  const int64_t mask = tokenizer.specials().id(data::SpecialToken::kMask);
  NoGradGuard no_grad;
  for (size_t i = 0; i < kLines.size(); ++i) {
    const std::vector<int64_t> ids = tokenizer.encode(kLines[i]);
    double expected = 0;
    int64_t scored = 0;
    // Windows of the recipe's 32 tokens; each position masked alone, scored by model.loss.
    for (size_t start = 0; start < ids.size(); start += 32) {
      const size_t length = std::min<size_t>(32, ids.size() - start);
      for (size_t j = 0; j < length; ++j) {
        if (tokenizer.specials().is_special(ids[start + j])) continue;
        Tensor tokens = Tensor::empty({1, static_cast<int64_t>(length)}, DType::kI64);
        Tensor targets = Tensor::empty({1, static_cast<int64_t>(length)}, DType::kI64);
        for (size_t k = 0; k < length; ++k) {
          tokens.data<int64_t>()[k] = k == j ? mask : ids[start + k];
          targets.data<int64_t>()[k] = k == j ? ids[start + k] : data::kIgnoreIndex;
        }
        expected -= task.masked_lm().loss(tokens, targets).item();
        ++scored;
      }
    }
    EXPECT_EQ(records[i]["scored"], scored);
    EXPECT_NEAR(records[i]["pseudo_logprob"].get<double>(), expected,
                1e-4 * std::max(1.0, std::abs(expected)))
        << "line " << i;
  }
}

TEST(ClassifierPredict, ProbabilitiesAreTheSoftmaxOfOneExampleAtATime) {
  TempDir dir;
  const fs::path run = dir.path() / "run";
  train_tiny("tiny_classifier", {}, run);
  const fs::path input = write_lines(dir.path() / "lines.txt");
  const std::vector<json> records = predict(run, input, 3, dir.path() / "out.jsonl");
  ASSERT_EQ(records.size(), kLines.size());

  CheckpointTask loaded = load_checkpoint_task(run.string());
  auto& task = dynamic_cast<ClassifierTask&>(*loaded.task);
  const data::Tokenizer& tokenizer = task.tokenizer();
  const std::vector<std::string> names = task.label_names();
  NoGradGuard no_grad;
  for (size_t i = 0; i < kLines.size(); ++i) {
    // [<cls>] + the text's ids, cut to the recipe's 32 tokens, alone in its batch.
    std::vector<int64_t> ids = {tokenizer.specials().id(data::SpecialToken::kCls)};
    for (int64_t id : tokenizer.encode(kLines[i])) ids.push_back(id);
    ids.resize(std::min<size_t>(ids.size(), 32));
    const int64_t n = static_cast<int64_t>(ids.size());
    Tensor tokens = Tensor::empty({1, n}, DType::kI64);
    Tensor mask = Tensor::empty({1, n}, DType::kF32);
    for (int64_t k = 0; k < n; ++k) {
      tokens.data<int64_t>()[k] = ids[static_cast<size_t>(k)];
      mask.data<float>()[k] = 1.0f;
    }
    const Tensor logits = task.classifier().forward(tokens, mask).data().contiguous();
    const float* l = logits.data<float>();
    const double z = std::exp(l[0]) + std::exp(l[1]);
    const json& p = records[i]["probabilities"];
    EXPECT_NEAR(p[names[0]].get<double>(), std::exp(l[0]) / z, 1e-5) << "line " << i;
    EXPECT_NEAR(p[names[1]].get<double>(), std::exp(l[1]) / z, 1e-5) << "line " << i;
    const int64_t best = l[1] > l[0] ? 1 : 0;
    EXPECT_EQ(records[i]["class"], best);
    EXPECT_EQ(records[i]["label"], names[static_cast<size_t>(best)]);
  }
}

TEST(Predict, RefusesAnUnknownFormatAndABadBatchSize) {
  TempDir dir;
  PredictRequest request;
  request.checkpoint = (dir.path() / "missing").string();
  request.input = (dir.path() / "x.txt").string();
  request.format = "xml";
  expect_usage_error([&] { run_prediction(request); }, "'xml' is not a format");
  request.format = "auto";
  request.batch_size = 0;
  expect_usage_error([&] { run_prediction(request); }, "--batch-size must be >= 1");
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::app
