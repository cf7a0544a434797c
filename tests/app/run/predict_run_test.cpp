// `rota predict`: line scores equal the models' own losses; classifier probabilities.
#include <algorithm>
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
    // The line as it reads after a line break in training text: byte 10, or the word
    // tokenizer's <eos> (which it writes for a line break).
    const std::vector<int64_t> line_break = tokenizer.encode("\n");
    ASSERT_EQ(line_break.size(), 1u);
    if (std::string(GetParam()) == "WORD") {
      EXPECT_EQ(line_break[0], specials.id(data::SpecialToken::kEos));
    } else {
      EXPECT_EQ(line_break[0], int64_t{'\n'});
    }
    std::vector<int64_t> stream = tokenizer.encode(kLines[i]);
    EXPECT_EQ(record["tokens"], static_cast<int64_t>(stream.size()));
    stream.insert(stream.begin(), line_break[0]);
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

std::string tokenizer_golden(const std::string& name) {
  return std::string(ROTA_SOURCE_DIR) + "/tests/golden/tokenizers/" + name;
}

// A model whose logits at t depend on token t alone: every attention output projection zeroed
// (the recipe has no absolute positions), so it scores a token by the one before it.
void make_previous_token_model(models::CausalLm& model) {
  int zeroed = 0;
  for (auto& [name, parameter] : model.named_parameters()) {
    if (name.find(".attn.out_proj.") == std::string::npos) continue;
    parameter.set_data(zeros_like(parameter.data()));
    ++zeroed;
  }
  ASSERT_GE(zeroed, 2);  // two layers
}

class CausalPredictContext : public ::testing::TestWithParam<std::vector<std::string>> {};

// A line is scored after the context it has in training text: with a model that looks only at
// the previous token, each scored token's log-probability is the one it gets where the line
// sits in the training form of a text holding it (the tokenizer's encoding of the whole text),
// first token included.
TEST_P(CausalPredictContext, EveryTokenIsScoredAfterWhatPrecedesItInTrainingText) {
  TempDir dir;
  const fs::path run = dir.path() / "run";
  train_tiny("tiny_causal_lm", GetParam(), run);
  CheckpointTask loaded = load_checkpoint_task(run.string());
  auto& task = dynamic_cast<CausalLmTask&>(*loaded.task);
  make_previous_token_model(task.causal_lm());
  const data::Tokenizer& tokenizer = task.tokenizer();

  const std::vector<std::string> lines = {
      "ROMEO: But soft, what light through yonder window breaks?",
      " It is the east, and Juliet is the sun.", "x", "Arise, fair sun"};
  std::string text = "Before the lines.\n";
  for (const std::string& line : lines) text += line + "\n";
  const std::vector<int64_t> stream = tokenizer.encode(text);
  NoGradGuard no_grad;
  const int64_t n = static_cast<int64_t>(stream.size());
  Tensor ids = Tensor::empty({1, n}, DType::kI64);
  std::copy(stream.begin(), stream.end(), ids.data<int64_t>());
  Tensor logits = task.causal_lm().forward(ids).data().contiguous();  // [1, n, V]
  if (logits.dtype() != DType::kF32) logits = logits.to(DType::kF32);
  const int64_t V = logits.size(2);
  const auto stream_logprob = [&](int64_t position) {  // log p(stream[position] | before)
    const float* row = logits.data<float>() + (position - 1) * V;
    double top = row[0];
    for (int64_t v = 1; v < V; ++v) top = std::max(top, static_cast<double>(row[v]));
    double total = 0;
    for (int64_t v = 0; v < V; ++v) total += std::exp(row[v] - top);
    return row[stream[static_cast<size_t>(position)]] - top - std::log(total);
  };

  const LineContext context = causal_line_context(tokenizer, -1);
  ASSERT_FALSE(context.lead.empty()) << "every tokenizer here writes line breaks";
  const std::vector<LineScore> scores =
      causal_line_scores(task.causal_lm(), tokenizer, lines, context, 32, 3);
  int64_t cursor = 1;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::vector<int64_t>& line = scores[i].ids;
    ASSERT_FALSE(line.empty());
    // Where the line's tokens sit in the training form.
    const auto at = std::search(stream.begin() + cursor, stream.end(), line.begin(), line.end());
    ASSERT_NE(at, stream.end()) << "line " << i << " reads differently in training text";
    const int64_t start = at - stream.begin();
    EXPECT_EQ(scores[i].scored, static_cast<int64_t>(line.size())) << "line " << i;
    for (size_t j = 0; j < line.size(); ++j) {
      ASSERT_EQ(scores[i].scored_mask[j], 1) << "line " << i << " token " << j;
      const double expected = stream_logprob(start + static_cast<int64_t>(j));
      EXPECT_NEAR(scores[i].token_logprobs[j], expected, 1e-4 * std::max(1.0, std::abs(expected)))
          << "line " << i << " token " << j;
    }
    cursor = start + static_cast<int64_t>(line.size());
  }
}

INSTANTIATE_TEST_SUITE_P(
    Tokenizers, CausalPredictContext,
    ::testing::Values(
        std::vector<std::string>{"data.tokenizer.kind=BYTE"},
        std::vector<std::string>{"data.tokenizer.kind=CHAR"},
        std::vector<std::string>{"data.tokenizer.kind=WORD"},
        std::vector<std::string>{"data.tokenizer.kind=HUGGINGFACE",
                                 "data.tokenizer.path=" + tokenizer_golden("gpt2_bpe.json")},
        std::vector<std::string>{"data.tokenizer.kind=HUGGINGFACE",
                                 "data.tokenizer.path=" + tokenizer_golden("llama2_bpe.json")},
        std::vector<std::string>{
            "data.tokenizer.kind=HUGGINGFACE",
            "data.tokenizer.path=" + tokenizer_golden("unigram_metaspace.json")}));

// With records as documents, `rota predict` scores a line as a record: after the separator
// that ends the record before it in the training stream (here the <sep> Rota adds to the byte
// tokenizer), not after a line break.
TEST(CausalPredictContext, RecordsAreScoredAfterTheDocumentSeparator) {
  TempDir dir;
  {
    std::ofstream out(dir.path() / "a.jsonl");
    for (int i = 0; i < 400; ++i) {
      out << "{\"text\": \"record " << i << ", word " << (i * 7919) % 1000 << "\"}\n";
    }
  }
  const fs::path run = dir.path() / "run";
  train_tiny("tiny_causal_lm",
             {"data.files={train: \"" + (dir.path() / "a.jsonl").string() +
                  "\" text_field: \"text\" valid_fraction: 0.05}",
              "data.documents=RECORDS"},
             run);
  const fs::path input = write_lines(dir.path() / "lines.txt");
  const std::vector<json> records = predict(run, input, 2, dir.path() / "out.jsonl");
  ASSERT_EQ(records.size(), kLines.size());
  CheckpointTask loaded = load_checkpoint_task(run.string());
  auto& task = dynamic_cast<CausalLmTask&>(*loaded.task);
  const int64_t sep = task.tokenizer().specials().id(data::SpecialToken::kSep);
  NoGradGuard no_grad;
  for (size_t i = 0; i < kLines.size(); ++i) {
    std::vector<int64_t> stream = task.tokenizer().encode(kLines[i]);
    if (stream.empty()) continue;
    stream.insert(stream.begin(), sep);
    EXPECT_EQ(records[i]["scored"], static_cast<int64_t>(stream.size()) - 1);
    const double expected = -summed_causal_loss(task.causal_lm(), stream, 32);
    EXPECT_NEAR(records[i]["logprob"].get<double>(), expected, 1e-4 * std::abs(expected))
        << "line " << i;
  }
}

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
