// `rota data prepare` + training on the prepared directory: the same batches and bit-identical
// training as on the raw text, resume, and refusals (tokenizer kind, damage, arguments).
#include "app/run/prepare_run.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "app/run/eval_run.h"
#include "app/run/exit_codes.h"
#include "app/run/train_run.h"
#include "data/prepared/prepared_corpus.h"
#include "framework/io/checkpoint.h"
#include "framework/io/checkpoint_paths.h"
#include "recipes/recipe_error.h"
#include "tests/framework/io/io_test_util.h"
#include "tests/support/expect_error.h"
#include "tests/support/source_tree.h"
#include "tests/support/temp_dir.h"

namespace rota::app {
namespace ROTA_TEST_FILE_NS {

namespace fs = std::filesystem;
using io::testing::read_bytes;
using rota::testing::expect_error;
using rota::testing::TempDir;

// Runs f with stdout captured (released also when f throws).
template <typename F>
int quietly(F&& f) {
  ::testing::internal::CaptureStdout();
  try {
    const int code = f();
    ::testing::internal::GetCapturedStdout();
    return code;
  } catch (...) {
    ::testing::internal::GetCapturedStdout();
    throw;
  }
}

// Expects f to throw (a rota::Error or a RecipeError) with every fragment in the message.
void expect_failure(const std::function<void()>& f, const std::vector<std::string>& fragments) {
  try {
    f();
  } catch (const std::exception& e) {
    for (const std::string& fragment : fragments) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
    return;
  }
  ADD_FAILURE() << "no error thrown; expected one containing " << fragments.front();
}

std::string recipe_path(const std::string& name) {
  return std::string(ROTA_SOURCE_DIR) + "/recipes/tests/" + name + ".txtpb";
}

int prepare(const std::string& recipe, const fs::path& out, std::vector<std::string> sets = {}) {
  PrepareRequest request;
  request.recipe = recipe.empty() ? "" : recipe_path(recipe);
  request.out = out.string();
  request.overrides = std::move(sets);
  request.shard_mb = 1;  // several shards for the 1 MB training split
  request.threads = 2;
  return quietly([&] { return run_data_prepare(request); });
}

int train(const std::string& recipe, const fs::path& out, std::vector<std::string> sets,
          bool resume = false, int64_t stop_after = 0) {
  TrainRequest request;
  request.recipe = recipe_path(recipe);
  request.out = out.string();
  request.overrides = std::move(sets);
  request.resume = resume;
  request.stop_after = stop_after;
  return quietly([&] { return run_training(request); });
}

// metrics.jsonl without the one wall-clock field.
std::string metrics_without_speed(const fs::path& run) {
  std::ifstream in(run / "metrics.jsonl");
  std::string line, out;
  while (std::getline(in, line)) {
    nlohmann::json j = nlohmann::json::parse(line);
    j.erase("tokens_per_s");
    out += j.dump() + "\n";
  }
  return out;
}

fs::path latest(const fs::path& run) {
  return io::find_latest(run).value_or(fs::path());
}

void expect_same_training(const fs::path& a, const fs::path& b) {
  const std::string ma = metrics_without_speed(a);
  EXPECT_FALSE(ma.empty());
  EXPECT_EQ(ma, metrics_without_speed(b));
  EXPECT_EQ(latest(a).filename(), "step_000020");
  ASSERT_EQ(latest(a).filename(), latest(b).filename());
  for (const char* file : {io::kModelFile, io::kOptimizerFile, "tokenizer.json"}) {
    EXPECT_TRUE(read_bytes(latest(a) / file) == read_bytes(latest(b) / file)) << file;
  }
}

void expect_prepared_trains_like_raw(const std::string& recipe) {
  TempDir tmp;
  const fs::path prepared = tmp / "prepared";
  ASSERT_EQ(prepare(recipe, prepared), kExitOk);
  ASSERT_EQ(train(recipe, tmp / "raw", {}), kExitOk);
  ASSERT_EQ(train(recipe, tmp / "from-prepared", {"data.prepared=" + prepared.string()}), kExitOk);
  expect_same_training(tmp / "raw", tmp / "from-prepared");
  // `rota eval` of the run reads the test split from the directory: the same numbers.
  auto evaluate = [](const fs::path& run) {
    EvalRequest request;
    request.checkpoint = run.string();
    request.split = "test";
    request.batches = 3;
    ::testing::internal::CaptureStdout();
    EXPECT_EQ(run_evaluation(request), kExitOk);
    const std::string out = ::testing::internal::GetCapturedStdout();
    return out.substr(out.find("split=test"));
  };
  EXPECT_EQ(evaluate(tmp / "raw"), evaluate(tmp / "from-prepared"));
}

TEST(PrepareRun, CausalLmTrainsBitIdenticallyFromThePreparedDirectory) {
  expect_prepared_trains_like_raw("tiny_causal_lm");
}

TEST(PrepareRun, MaskedLmTrainsBitIdenticallyFromThePreparedDirectory) {
  // The masked LM's tokenizer has <pad> <mask> <cls> <sep> beyond the bytes; prepare builds the
  // same one training builds.
  expect_prepared_trains_like_raw("tiny_masked_lm");
}

TEST(PrepareRun, AJsonLinesFilesSourceTrainsBitIdenticallyFromThePreparedDirectory) {
  // data.files: the text field of JSON Lines records, validation held out from train.
  TempDir tmp;
  {
    std::ofstream out(tmp / "a.jsonl");
    for (int i = 0; i < 3000; ++i) {
      out << "{\"text\": \"line " << i << " of the story, word " << (i * 7919) % 1000
          << " and more words\"}\n";
    }
  }
  const std::string files = "data.files={train: \"" + (tmp / "a.jsonl").string() +
                            "\" text_field: \"text\" valid_fraction: 0.05}";
  const fs::path prepared = tmp / "prepared";
  ASSERT_EQ(prepare("tiny_causal_lm", prepared, {files}), kExitOk);
  ASSERT_EQ(train("tiny_causal_lm", tmp / "raw", {files}), kExitOk);
  ASSERT_EQ(train("tiny_causal_lm", tmp / "from-prepared", {"data.prepared=" + prepared.string()}),
            kExitOk);
  expect_same_training(tmp / "raw", tmp / "from-prepared");
}

// Documents the source marks (data.documents RECORDS): the prepared directory holds the <sep>
// after every record, training from it is bit-identical to training from the records, marking
// the documents changes what is learned, and a recipe whose documents differ from the
// directory's is refused naming both.
TEST(PrepareRun, DocumentsTheSourceMarksTrainBitIdenticallyFromThePreparedDirectory) {
  TempDir tmp;
  {
    std::ofstream out(tmp / "a.jsonl");
    for (int i = 0; i < 2000; ++i) {
      out << "{\"text\": \"record " << i << ", word " << (i * 7919) % 1000 << "\"}\n";
    }
  }
  const std::string files = "data.files={train: \"" + (tmp / "a.jsonl").string() +
                            "\" text_field: \"text\" valid_fraction: 0.05}";
  const std::string records = "data.documents=RECORDS";
  const fs::path prepared = tmp / "prepared";
  ASSERT_EQ(prepare("tiny_causal_lm", prepared, {files, records}), kExitOk);
  const data::PreparedCorpus directory = data::PreparedCorpus::open(prepared);
  EXPECT_EQ(directory.manifest().documents, data::DocumentBoundary::kRecords);
  const int64_t sep = directory.load_tokenizer()->specials().id(data::SpecialToken::kSep);
  EXPECT_EQ(directory.manifest().document_end_token, sep);
  // 1,900 training records, each ending with the separator.
  const std::vector<int64_t> ids = directory.split_stream("train")->to_vector();
  EXPECT_EQ(std::count(ids.begin(), ids.end(), sep), 1900);
  EXPECT_EQ(ids.back(), sep);

  ASSERT_EQ(train("tiny_causal_lm", tmp / "raw", {files, records}), kExitOk);
  ASSERT_EQ(train("tiny_causal_lm", tmp / "from-prepared",
                  {"data.prepared=" + prepared.string(), records}),
            kExitOk);
  expect_same_training(tmp / "raw", tmp / "from-prepared");
  ASSERT_EQ(train("tiny_causal_lm", tmp / "unmarked", {files}), kExitOk);
  EXPECT_FALSE(read_bytes(latest(tmp / "raw") / io::kModelFile) ==
               read_bytes(latest(tmp / "unmarked") / io::kModelFile));

  expect_failure(
      [&] {
        train("tiny_causal_lm", tmp / "other",
              {"data.prepared=" + prepared.string(), "data.documents=FILES"});
      },
      {"data.documents: FILES, but the prepared directory", "was prepared with documents records"});
  const fs::path unmarked = tmp / "prepared-unmarked";
  ASSERT_EQ(prepare("tiny_causal_lm", unmarked, {files}), kExitOk);
  expect_failure(
      [&] {
        train("tiny_causal_lm", tmp / "other", {"data.prepared=" + unmarked.string(), records});
      },
      {"data.documents: RECORDS, but the prepared directory", "no documents marked"});
}

// A recipe written for the raw text with its own tokenizer file trains on the directory
// prepared with that file by adding only data.prepared; a different file is refused naming
// the fix, before anything is trained.
TEST(PrepareRun, ARecipesOwnTokenizerFileMayStayWhenItIsTheDirectorysTokenizer) {
  TempDir tmp;
  const std::string tokenizers = std::string(ROTA_SOURCE_DIR) + "/tests/golden/tokenizers/";
  const std::string gpt2 = "data.tokenizer.path=" + tokenizers + "gpt2_bpe.json";
  const std::vector<std::string> short_run = {"train.steps=2", "train.eval_every=2",
                                              "train.eval_batches=1",
                                              "data.tokenizer.kind=HUGGINGFACE"};
  const fs::path prepared = tmp / "prepared";
  ASSERT_EQ(prepare("tiny_causal_lm", prepared, {gpt2, "data.tokenizer.kind=HUGGINGFACE"}),
            kExitOk);
  std::vector<std::string> sets = short_run;
  sets.push_back(gpt2);
  sets.push_back("data.prepared=" + prepared.string());
  EXPECT_EQ(train("tiny_causal_lm", tmp / "same", sets), kExitOk);

  sets = short_run;
  sets.push_back("data.tokenizer.path=" + tokenizers + "llama2_bpe.json");
  sets.push_back("data.prepared=" + prepared.string());
  expect_failure([&] { train("tiny_causal_lm", tmp / "other", sets); },
                 {"data.tokenizer.path: " + tokenizers + "llama2_bpe.json is not the tokenizer",
                  "--unset data.tokenizer.path", "rota data prepare"});
  EXPECT_FALSE(fs::exists(tmp / "other" / "metrics.jsonl"));
}

TEST(PrepareRun, ResumeFromAPreparedDirectoryIsBitExact) {
  TempDir tmp;
  const fs::path prepared = tmp / "prepared";
  ASSERT_EQ(prepare("tiny_causal_lm", prepared), kExitOk);
  const std::vector<std::string> sets = {"data.prepared=" + prepared.string(), "model.dropout=0.1"};
  ASSERT_EQ(train("tiny_causal_lm", tmp / "straight", sets), kExitOk);
  ASSERT_EQ(train("tiny_causal_lm", tmp / "resumed", sets, false, 7), kExitOk);
  ASSERT_EQ(train("tiny_causal_lm", tmp / "resumed", sets, true), kExitOk);
  expect_same_training(tmp / "straight", tmp / "resumed");
}

TEST(PrepareRun, FlagsWithoutARecipeGiveTheSameDirectory) {
  TempDir tmp;
  ASSERT_EQ(prepare("tiny_causal_lm", tmp / "a"), kExitOk);
  PrepareRequest request;
  request.corpus = "tinyshakespeare";
  request.tokenizer = (tmp / "a" / "tokenizer").string();
  request.out = (tmp / "b").string();
  request.shard_mb = 1;
  ASSERT_EQ(quietly([&] { return run_data_prepare(request); }), kExitOk);
  EXPECT_EQ(read_bytes(tmp / "a" / "manifest.json"), read_bytes(tmp / "b" / "manifest.json"));
}

TEST(PrepareRun, RefusesWhatItCannotPrepare) {
  TempDir tmp;
  PrepareRequest request;
  request.out = (tmp / "x").string();
  expect_failure([&] { run_data_prepare(request); }, {"--corpus and --tokenizer"});
  request.recipe = recipe_path("tiny_classifier");
  expect_failure([&] { run_data_prepare(request); }, {"CLASSIFIER"});
  request.recipe.clear();
  request.corpus = "tinyshakespeare";
  request.tokenizer = "/nonexistent/tokenizer";
  expect_failure([&] { run_data_prepare(request); }, {"/nonexistent/tokenizer"});
  EXPECT_FALSE(fs::exists(tmp / "x"));
}

TEST(PrepareRun, TrainingUsesTheDirectorysTokenizerAndRefusesADamagedDirectoryBeforeStarting) {
  TempDir tmp;
  const fs::path prepared = tmp / "prepared";
  ASSERT_EQ(prepare("tiny_causal_lm", prepared), kExitOk);
  // data.tokenizer's build options are not consulted: the directory's byte tokenizer is used.
  ASSERT_EQ(
      train("tiny_causal_lm", tmp / "run1",
            {"data.prepared=" + prepared.string(), "data.tokenizer.kind=WORD", "train.steps=2"}),
      kExitOk);
  EXPECT_EQ(read_bytes(latest(tmp / "run1") / "tokenizer.json"),
            read_bytes(prepared / "tokenizer" / "tokenizer.json"));
  fs::resize_file(prepared / "train-00001.bin", 100);
  expect_error(
      [&] { train("tiny_causal_lm", tmp / "run2", {"data.prepared=" + prepared.string()}); },
      {"train-00001.bin", "damaged"});
  EXPECT_FALSE(fs::exists(latest(tmp / "run2")));
  expect_error([&] { quietly([&] { return run_data_verify(prepared.string()); }); },
               "train-00001.bin");
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::app
