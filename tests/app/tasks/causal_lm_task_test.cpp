// A causal LM task with train.carry_state: each split evaluated as lanes carrying the state equals
// every lane read whole in one pass, by position too; options that cannot apply are refused.
// With packed documents (in the text or marked by the source) every document scores alone.
#include "app/tasks/causal_lm_task.h"

#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "app/setup/tokenizer_setup.h"
#include "framework/autograd/grad_mode.h"
#include "recipes/loader.h"
#include "recipes/recipe_error.h"
#include "tests/support/expect_error.h"
#include "tests/support/expect_recipe_error.h"
#include "tests/support/source_tree.h"

namespace rota::app {
namespace ROTA_TEST_FILE_NS {

using rota::testing::expect_error;
using rota::testing::expect_recipe_error;

std::unique_ptr<CausalLmTask> causal_task(const std::vector<std::string>& overrides) {
  TaskInputs inputs;
  inputs.recipe = recipes::load_recipe(
      std::string(ROTA_SOURCE_DIR) + "/recipes/tests/tiny_causal_lm.txtpb", overrides);
  inputs.tokenizer = obtain_tokenizer(inputs.recipe, std::nullopt, inputs.data_options);
  std::unique_ptr<Task> task = make_task(std::move(inputs));
  auto* causal = dynamic_cast<CausalLmTask*>(task.get());
  EXPECT_NE(causal, nullptr);
  task.release();
  return std::unique_ptr<CausalLmTask>(causal);
}

std::unique_ptr<CausalLmTask> stateful_task(std::vector<std::string> overrides) {
  overrides.push_back("train.carry_state=true");
  return causal_task(overrides);
}

// The independent reading: lane k = inputs [k·L, min((k + 1)·L, U)) of the split (U = N − 1,
// L = ceil(U / lanes)), cut to its first `limit` tokens, one forward pass over the whole lane.
struct LaneTotals {
  double loss_sum = 0;
  int64_t tokens = 0;
  std::vector<double> by_position;  // the loss at each position of the lanes, summed over lanes
};

LaneTotals whole_lanes(CausalLmTask& task, const std::string& split, int64_t lanes, int64_t limit) {
  const data::TokenStream stream = task.split_tokens(split);
  const int64_t usable = stream->size() - 1;
  const int64_t lane_length = (usable + lanes - 1) / lanes;
  LaneTotals totals;
  totals.by_position.assign(static_cast<size_t>(lane_length), 0.0);
  NoGradGuard no_grad;
  for (int64_t k = 0; k * lane_length < usable; ++k) {
    const int64_t start = k * lane_length;
    const int64_t length = std::min({lane_length, usable - start, limit});
    Tensor ids = Tensor::empty({1, length}, DType::kI64);
    Tensor targets = Tensor::empty({1, length}, DType::kI64);
    stream->copy_to(start, length, ids.data<int64_t>());
    stream->copy_to(start + 1, length, targets.data<int64_t>());
    const std::vector<double> losses =
        task.causal_lm().token_losses(ids, targets).to_double_vector();
    for (int64_t t = 0; t < length; ++t) {
      totals.loss_sum += losses[t];
      totals.by_position[t] += losses[t];
    }
    totals.tokens += length;
  }
  return totals;
}

TEST(StatefulEvaluation, EqualsEveryLaneReadWholeInOnePass) {
  // 4 lanes of windows of 32; the model is untrained (its initial weights).
  std::unique_ptr<CausalLmTask> task = stateful_task({"data.batch_size=4"});
  task->model().eval();
  for (int64_t max_batches : {3, 0}) {
    SCOPED_TRACE("max_batches " + std::to_string(max_batches));
    const train::Metrics metrics = task->evaluate_split("valid", max_batches);
    const LaneTotals expected =
        whole_lanes(*task, "valid", 4, max_batches > 0 ? max_batches * 32 : int64_t{1} << 40);
    EXPECT_EQ(train::metric_value(metrics, "tokens"), static_cast<double>(expected.tokens));
    const double loss = expected.loss_sum / static_cast<double>(expected.tokens);
    EXPECT_NEAR(train::metric_value(metrics, "loss"), loss, 2e-6 * loss);
    // The figure says how far into its lanes it reached: lanes of ceil(usable / 4) tokens.
    const int64_t usable = task->split_tokens("valid")->size() - 1;
    const int64_t lane_length = (usable + 3) / 4;
    EXPECT_EQ(train::metric_value(metrics, "lane_length"), static_cast<double>(lane_length));
    EXPECT_EQ(train::metric_value(metrics, "lane_positions"),
              static_cast<double>(max_batches > 0 ? max_batches * 32 : lane_length));
  }
  // By position: position p of a lane (1-based) in bucket floor(log2 p), over the whole lanes.
  const std::vector<PositionBucket> buckets = task->evaluate_by_position("valid", 0);
  const LaneTotals expected = whole_lanes(*task, "valid", 4, int64_t{1} << 40);
  int64_t tokens = 0;
  for (const PositionBucket& bucket : buckets) {
    double sum = 0;
    for (int64_t p = bucket.first; p <= bucket.last; ++p) sum += expected.by_position[p - 1];
    EXPECT_NEAR(bucket.loss_sum, sum, 1e-5 * std::max(1.0, sum)) << bucket.first;
    tokens += bucket.tokens;
  }
  EXPECT_EQ(tokens, expected.tokens);
  EXPECT_EQ(buckets.back().last, static_cast<int64_t>(expected.by_position.size()));
}

// Adds to `totals` the losses of tokens [0, n) of `tokens` (n + 1 values: the last is only a
// target) with each document (up to and including its separator, or the end) scored alone from
// its first token, every target but a separator's.
void score_documents_alone(CausalLmTask& task, const std::vector<int64_t>& tokens,
                           int64_t separator, LaneTotals& totals) {
  const int64_t n = static_cast<int64_t>(tokens.size()) - 1;
  NoGradGuard no_grad;
  for (int64_t start = 0; start < n;) {
    int64_t end = start;  // the document [start, end]
    while (end < n - 1 && tokens[end] != separator) ++end;
    const int64_t len = end - start + 1;
    Tensor ids = Tensor::empty({1, len}, DType::kI64);
    Tensor next = Tensor::empty({1, len}, DType::kI64);
    for (int64_t t = 0; t < len; ++t) {
      ids.data<int64_t>()[t] = tokens[start + t];
      next.data<int64_t>()[t] = tokens[start + t + 1];
    }
    const std::vector<double> losses = task.causal_lm().token_losses(ids, next).to_double_vector();
    for (int64_t t = 0; t < len; ++t) {
      if (tokens[start + t] == separator) continue;
      totals.loss_sum += losses[t];
      ++totals.tokens;
    }
    start = end + 1;
  }
}

// Packed lanes: with every line a document, each lane (read as whole_lanes reads it, up to
// `limit` tokens) is cut into its documents (a lane starts one; a separator ends one), each
// scored alone from its first token, every target but a separator's.
LaneTotals lane_documents_alone(CausalLmTask& task, const std::string& split, int64_t lanes,
                                int64_t limit, int64_t separator) {
  const data::TokenStream stream = task.split_tokens(split);
  const int64_t usable = stream->size() - 1;
  const int64_t lane_length = (usable + lanes - 1) / lanes;
  LaneTotals totals;
  for (int64_t k = 0; k * lane_length < usable; ++k) {
    const int64_t length = std::min({lane_length, usable - k * lane_length, limit});
    std::vector<int64_t> lane(static_cast<size_t>(length + 1));
    stream->copy_to(k * lane_length, length + 1, lane.data());  // inputs and the last target
    score_documents_alone(task, lane, separator, totals);
  }
  return totals;
}

TEST(StatefulEvaluation, PackedLanesScoreEachDocumentAsItselfAlone) {
  std::unique_ptr<CausalLmTask> task =
      stateful_task({"data.batch_size=4", "data.document_separator=\"\\n\""});
  task->model().eval();
  const int64_t separator = task->tokenizer().encode("\n").at(0);
  for (int64_t max_batches : {3, 0}) {
    SCOPED_TRACE("max_batches " + std::to_string(max_batches));
    const train::Metrics metrics = task->evaluate_split("valid", max_batches);
    const LaneTotals expected = lane_documents_alone(
        *task, "valid", 4, max_batches > 0 ? max_batches * 32 : int64_t{1} << 40, separator);
    EXPECT_EQ(train::metric_value(metrics, "tokens"), static_cast<double>(expected.tokens));
    const double loss = expected.loss_sum / static_cast<double>(expected.tokens);
    EXPECT_NEAR(train::metric_value(metrics, "loss"), loss, 2e-6 * loss);
  }
}

TEST(StatefulEvaluation, SlidingWindowsAndSeparateBatchesAreRefused) {
  std::unique_ptr<CausalLmTask> task = stateful_task({});
  expect_recipe_error([&] { task->set_evaluation_stride(8); },
                      "--stride 8: a run with train.carry_state evaluates each split as lanes");
  task->set_evaluation_stride(32);  // the window itself: nothing slides
  expect_recipe_error([&] { task->evaluation_batches("valid", 1); },
                      "which separate batches cannot reproduce");
}

// The evaluation of the first 8 windows of `split` computed independently: each document of a
// window (up to and including its separator, or the window's end) scored alone from its first
// token, every target but a separator's.
void expect_documents_scored_alone(CausalLmTask& task, const std::string& split,
                                   int64_t separator) {
  task.model().eval();
  const train::Metrics metrics = task.evaluate_split(split, 2);  // 2 batches of 4 windows
  const data::TokenStream stream = task.split_tokens(split);
  LaneTotals totals;
  for (int64_t w = 0; w < 8; ++w) {
    std::vector<int64_t> window(33);
    stream->copy_to(w * 32, 33, window.data());  // 32 inputs and the last target
    score_documents_alone(task, window, separator, totals);
  }
  EXPECT_EQ(train::metric_value(metrics, "tokens"), static_cast<double>(totals.tokens));
  const double loss = totals.loss_sum / static_cast<double>(totals.tokens);
  EXPECT_NEAR(train::metric_value(metrics, "loss"), loss, 2e-6 * loss);
  expect_recipe_error([&] { task.evaluation_batches(split, 1); },
                      "whose document ids separate batches do not carry");
}

// Packed documents (data.document_separator "\n": every line a document): the evaluation of a
// window scores each of its documents as that document alone would be scored (its own tokens
// from its first, every target but the separator's), and the evaluation batches refuse.
TEST(PackedEvaluation, EachDocumentOfAWindowScoresAsItselfAlone) {
  std::unique_ptr<CausalLmTask> task = causal_task({"data.document_separator=\"\\n\""});
  expect_documents_scored_alone(*task, "valid", task->tokenizer().encode("\n").at(0));
}

bool blank_line(const std::string& line) {
  return line.find_first_not_of(" \t\r\n") == std::string::npos;
}

// Documents the source marks (data.documents PARAGRAPHS, byte tokenizer): the split's ids are
// every paragraph's bytes followed by the <sep> token Rota added to the tokenizer, the paragraphs
// read off the split's text here line by line; windows then score each paragraph alone.
TEST(PackedEvaluation, ParagraphsTheSourceMarksEndWithTheSepToken) {
  std::unique_ptr<CausalLmTask> task = causal_task({"data.documents=PARAGRAPHS"});
  const int64_t sep = task->tokenizer().specials().id(data::SpecialToken::kSep);
  ASSERT_EQ(sep, 256);  // the bytes, then <sep>
  const std::string text = task->corpus().read_text("valid");
  std::vector<int64_t> expected;
  std::string document;
  bool content = false, last_blank = false;
  int64_t paragraphs = 0;
  for (size_t at = 0; at < text.size();) {
    const size_t end = std::min(text.find('\n', at), text.size() - 1) + 1;
    const std::string line = text.substr(at, end - at);
    at = end;
    if (!blank_line(line) && last_blank && content) {
      for (unsigned char c : document) expected.push_back(c);
      expected.push_back(sep);
      ++paragraphs;
      document.clear();
      content = false;
    }
    document += line;
    content = content || !blank_line(line);
    last_blank = blank_line(line);
  }
  for (unsigned char c : document) expected.push_back(c);
  if (content) expected.push_back(sep);
  EXPECT_GT(paragraphs, 100);
  EXPECT_EQ(task->split_tokens("valid")->to_vector(), expected);
  expect_documents_scored_alone(*task, "valid", sep);
}

// A separator the text itself gives cannot mark the documents a source ends.
TEST(PackedEvaluation, ASourceSeparatorTheTextContainsIsRefused) {
  std::unique_ptr<CausalLmTask> task =
      causal_task({"data.documents=PARAGRAPHS", "data.document_separator=\"e\""});
  expect_error([&] { task->split_tokens("valid"); },
               {"the valid split's text itself encodes to the document separator (token 101, e)",
                "choose another data.document_separator"});
}

TEST(PackedEvaluation, ASeparatorOfSeveralTokensIsRefused) {
  expect_recipe_error([] { causal_task({"data.document_separator=\"ab\""}); },
                      "data.document_separator: 'ab' encodes to 2 tokens");
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::app
