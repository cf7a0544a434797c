// `rota eval --context N` for every causal encoding; tables that cannot extrapolate fail clearly.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "app/run/eval_run.h"
#include "app/run/exit_codes.h"
#include "app/run/train_run.h"
#include "app/setup/context_length.h"
#include "app/tasks/causal_lm_task.h"
#include "app/tasks/checkpoint_task.h"
#include "app/tasks/classifier_task.h"
#include "app/tasks/masked_lm_task.h"
#include "framework/autograd/grad_mode.h"
#include "recipes/loader.h"
#include "recipes/recipe_error.h"
#include "tests/support/source_tree.h"
#include "tests/support/temp_dir.h"

namespace rota::app {
namespace ROTA_TEST_FILE_NS {

namespace fs = std::filesystem;
using rota::testing::TempDir;

constexpr int64_t kTrainedLength = 32;  // data.sequence_length of the tiny recipes

std::string recipe_path(const std::string& name) {
  return std::string(ROTA_SOURCE_DIR) + "/recipes/tests/" + name + ".txtpb";
}

/// Trains `recipe` with `position` for two steps into `out`.
void train_tiny(const std::string& recipe, const std::string& position, const fs::path& out,
                const std::vector<std::string>& extra = {}) {
  TrainRequest args;
  args.recipe = recipe_path(recipe);
  args.out = out.string();
  args.overrides = {"model.position=" + position, "train.steps=2", "train.eval_every=0",
                    "train.checkpoint_every=0", "train.eval_batches=1"};
  args.overrides.insert(args.overrides.end(), extra.begin(), extra.end());
  ::testing::internal::CaptureStdout();
  const int code = run_training(args);
  ::testing::internal::GetCapturedStdout();
  ASSERT_EQ(code, kExitOk) << position;
}

/// What `rota eval` printed: its log (stderr) and its metrics line (stdout).
struct EvalOutput {
  std::string log;
  std::string metrics;
};

/// run_evaluation(args) with its output captured (a refusal propagates, nothing left captured).
EvalOutput captured_evaluation(const EvalRequest& args) {
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  int code = -1;
  try {
    code = run_evaluation(args);
  } catch (...) {
    ::testing::internal::GetCapturedStderr();
    ::testing::internal::GetCapturedStdout();
    throw;
  }
  EvalOutput out;
  out.log = ::testing::internal::GetCapturedStderr();
  out.metrics = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(code, kExitOk);
  return out;
}

/// The refusal run_evaluation(args) throws (an empty string, and a failure, when it runs).
std::string refusal(const EvalRequest& args) {
  try {
    captured_evaluation(args);
  } catch (const recipes::RecipeError& e) {
    return e.what();
  }
  ADD_FAILURE() << "evaluated " << args.checkpoint << " instead of refusing";
  return "";
}

EvalRequest test_split_request(const fs::path& run, int64_t context) {
  EvalRequest args;
  args.checkpoint = run.string();
  args.split = "test";
  args.context = context;
  return args;
}

EvalOutput eval(const fs::path& run, int64_t context, int64_t batches) {
  EvalRequest args = test_split_request(run, context);
  args.batches = batches;
  EvalOutput out = captured_evaluation(args);
  EXPECT_EQ(std::count(out.metrics.begin(), out.metrics.end(), '\n'), 1) << out.metrics;
  return out;
}

double field(const std::string& line, const std::string& key) {
  std::istringstream fields(line);
  for (std::string f; fields >> f;) {
    if (f.rfind(key + "=", 0) == 0) return std::stod(f.substr(key.size() + 1));
  }
  ADD_FAILURE() << "no " << key << " in: " << line;
  return NAN;
}

/// The mean next-token loss over the first `windows` windows of `length` tokens of the test
/// split, computed window by window straight from the token stream (not through the
/// evaluation's dataset and batching).
double reference_loss(const fs::path& run, int64_t length, int64_t windows) {
  CheckpointTask loaded = load_checkpoint_task(run.string());
  auto* task = dynamic_cast<CausalLmTask*>(loaded.task.get());
  EXPECT_NE(task, nullptr);
  const data::TokenStream stream = task->split_tokens("test");
  NoGradGuard no_grad;
  double sum = 0;
  for (int64_t w = 0; w < windows; ++w) {
    std::vector<double> ids, targets;
    for (int64_t t = 0; t < length; ++t) {
      ids.push_back(static_cast<double>(stream->at(w * length + t)));
      targets.push_back(static_cast<double>(stream->at(w * length + t + 1)));
    }
    const Tensor x = tensor_from(ids, {1, length}, DType::kI64);
    const Tensor y = tensor_from(targets, {1, length}, DType::kI64);
    sum += task->causal_lm().loss(x, y).item();
  }
  return sum / static_cast<double>(windows);
}

struct Encoding {
  std::string name;
  std::string recipe;                   // tiny_causal_lm (linear attention) or tiny_softmax_lm
  std::string position;                 // the model.position override
  std::vector<std::string> extra = {};  // more overrides (a hybrid stack)
};

class EvalAtContext : public ::testing::TestWithParam<Encoding> {};

TEST_P(EvalAtContext, TwiceTheTrainingLengthLoadsTheSameWeightsAndScoresLongerWindows) {
  const Encoding& e = GetParam();
  TempDir tmp;
  const fs::path run = tmp / "run";
  train_tiny(e.recipe, e.position, run, e.extra);

  // --context T is the plain evaluation (same windows, same batch).
  const EvalOutput plain = eval(run, 0, 2);
  const EvalOutput same = eval(run, kTrainedLength, 2);
  EXPECT_EQ(plain.metrics, same.metrics);

  // --context 2T: the weights load strictly (model shapes do not depend on the length), the
  // loss is finite, and it is the loss of 2T-token windows. The micro-batch of 4 × 32 tokens
  // becomes 2 × 64 tokens, so --batches 1 scores exactly the first two windows.
  const EvalOutput doubled = eval(run, 2 * kTrainedLength, 1);
  EXPECT_NE(doubled.log.find("sequence_length=64"), std::string::npos) << doubled.log;
  const double loss = field(doubled.metrics, "loss");
  const double ppl = field(doubled.metrics, "ppl");
  ASSERT_TRUE(std::isfinite(loss)) << doubled.metrics;
  EXPECT_NEAR(ppl, std::exp(loss), 1e-5 * ppl);
  EXPECT_EQ(field(doubled.metrics, "tokens"), 2 * 2 * kTrainedLength);
  // Printed to 6 significant digits, summed in another order: 1e-5 relative covers both.
  const double expected = reference_loss(run, 2 * kTrainedLength, 2);
  EXPECT_NEAR(loss, expected, 1e-5 * std::abs(expected)) << e.name;
}

INSTANTIATE_TEST_SUITE_P(
    CausalEncodings, EvalAtContext,
    ::testing::Values(Encoding{"linear_none", "tiny_causal_lm", "{none {}}"},
                      Encoding{"linear_sinusoidal", "tiny_causal_lm", "{sinusoidal {}}"},
                      Encoding{"linear_learned_absolute", "tiny_causal_lm",
                               "{learned_absolute {max_positions: 64}}"},
                      Encoding{"linear_rope", "tiny_causal_lm", "{rope {}}"},
                      Encoding{"linear_lrpe_type1", "tiny_causal_lm", "{lrpe {type: 1}}"},
                      Encoding{"linear_lrpe_type2", "tiny_causal_lm", "{lrpe {type: 2}}"},
                      Encoding{"linear_lrpe_type3", "tiny_causal_lm", "{lrpe {type: 3}}"},
                      Encoding{"linear_permute_former", "tiny_causal_lm", "{permute_former {}}"},
                      Encoding{"softmax_rope", "tiny_softmax_lm", "{rope {}}"},
                      Encoding{"softmax_shaw", "tiny_softmax_lm", "{shaw {clip: 8}}"},
                      Encoding{"softmax_transformer_xl", "tiny_softmax_lm", "{transformer_xl {}}"},
                      Encoding{"softmax_skew", "tiny_softmax_lm", "{skew {max_len: 64}}"},
                      Encoding{"softmax_t5", "tiny_softmax_lm", "{t5 {}}"},
                      Encoding{"softmax_alibi", "tiny_softmax_lm", "{alibi {}}"},
                      // Hybrid stacks: a windowed softmax RoPE block in a linear LRPE stack, a
                      // linear LRPE block in a softmax ALiBi stack.
                      Encoding{"hybrid_linear_softmax_window",
                               "tiny_causal_lm",
                               "{lrpe {}}",
                               {"model.hybrid={blocks: 1 attention {softmax {window: 5}} position "
                                "{rope {}}}"}},
                      Encoding{"hybrid_softmax_linear",
                               "tiny_softmax_lm",
                               "{alibi {}}",
                               {"model.hybrid={blocks: 0 attention {linear {}} position {lrpe "
                                "{}}}"}}),
    [](const ::testing::TestParamInfo<Encoding>& info) { return info.param.name; });

/// --context past a learned table is refused before any evaluation, naming the field.
void expect_refused(const std::string& recipe, const std::string& position,
                    const std::string& field_name) {
  TempDir tmp;
  const fs::path run = tmp / "run";
  train_tiny(recipe, position, run);
  try {
    eval(run, 2 * kTrainedLength, 1);
    FAIL() << "expected --context 64 to be refused for " << position;
  } catch (const recipes::RecipeError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(field_name), std::string::npos) << message;
    EXPECT_NE(message.find("--context 64"), std::string::npos) << message;
    EXPECT_NE(message.find("32"), std::string::npos) << message;  // the limit
  }
  // The ablation asks the same question before it starts an evaluation ("n/a").
  const recipes::Recipe trained = recipes::load_recipe((run / "recipe.txtpb").string());
  EXPECT_NE(context_problem(trained, 2 * kTrainedLength).find(field_name), std::string::npos);
  EXPECT_EQ(context_problem(trained, kTrainedLength), "");
}

TEST(EvalContext, LearnedAbsolutePositionsPastTheirTableFailNamingMaxPositions) {
  expect_refused("tiny_causal_lm", "{learned_absolute {max_positions: 32}}",
                 "model.position.learned_absolute.max_positions");
}

TEST(EvalContext, ASkewTablePastItsMaxLenFailsNamingMaxLen) {
  expect_refused("tiny_softmax_lm", "{skew {max_len: 32}}", "model.position.skew.max_len");
}

TEST(EvalContext, TheEvaluationBatchKeepsItsTokenCount) {
  const recipes::Recipe trained = recipes::load_recipe(recipe_path("tiny_causal_lm"));
  ASSERT_EQ(trained.data().batch_size(), 4);
  ASSERT_EQ(trained.data().sequence_length(), kTrainedLength);
  EXPECT_EQ(recipe_at_context(trained, 64).data().batch_size(), 2);
  EXPECT_EQ(recipe_at_context(trained, 64).data().sequence_length(), 64);
  EXPECT_EQ(recipe_at_context(trained, 16).data().batch_size(), 8);
  EXPECT_EQ(recipe_at_context(trained, 1024).data().batch_size(), 1);
  EXPECT_THROW(recipe_at_context(trained, 0), recipes::RecipeError);
}

// --by-position: the buckets [1, 1], [2, 3], [4, 7], ... cut at the context; their token counts
// add up to the split's and their token-weighted mean loss is the split's loss; the contract
// line stays last. Other model kinds are refused with the reason.
TEST(EvalByPosition, BucketsPartitionTheTokensAndAverageToTheSplitLoss) {
  TempDir tmp;
  train_tiny("tiny_causal_lm", "{lrpe {}}", tmp / "run");
  EvalRequest args = test_split_request(tmp / "run", 48);
  args.by_position = true;
  const std::string out = captured_evaluation(args).metrics;
  std::vector<std::string> lines;
  std::istringstream stream(out);
  for (std::string line; std::getline(stream, line);) lines.push_back(line);
  const std::vector<std::string> ranges = {"1-1", "2-3", "4-7", "8-15", "16-31", "32-48"};
  ASSERT_EQ(lines.size(), ranges.size() + 1) << out;
  double weighted = 0, tokens = 0;
  for (size_t k = 0; k < ranges.size(); ++k) {
    EXPECT_EQ(lines[k].rfind("positions=" + ranges[k] + " ", 0), 0u) << lines[k];
    const double n = field(lines[k], "tokens"), loss = field(lines[k], "loss");
    EXPECT_GT(n, 0);
    EXPECT_NEAR(field(lines[k], "ppl"), std::exp(loss), 1e-5 * std::exp(loss));
    weighted += n * loss;
    tokens += n;
  }
  const std::string& last = lines.back();
  EXPECT_EQ(last.rfind("split=test ", 0), 0u) << last;
  EXPECT_EQ(tokens, field(last, "tokens"));
  EXPECT_NEAR(weighted / tokens, field(last, "loss"), 1e-5 * field(last, "loss"));

  train_tiny("tiny_masked_lm", "{lrpe {}}", tmp / "mlm");
  args.checkpoint = (tmp / "mlm").string();
  EXPECT_NE(refusal(args).find("applies to causal language models (this run is a MASKED_LM)"),
            std::string::npos);
}

// --stride: S = the window is the plain evaluation, bit for bit; a smaller stride scores the same
// tokens (each once) with more context, so only the first window fills the early position
// buckets; a masked LM refuses the flag.
TEST(EvalStride, SlidingWindowsScoreTheSameTokensAndFullStrideIsThePlainEvaluation) {
  TempDir tmp;
  train_tiny("tiny_causal_lm", "{lrpe {}}", tmp / "run");
  const auto run_eval = [&](const fs::path& run, int64_t stride, bool by_position) {
    EvalRequest args = test_split_request(run, 32);
    args.stride = stride;
    args.by_position = by_position;
    return captured_evaluation(args).metrics;
  };
  const std::string plain = run_eval(tmp / "run", 0, false);
  EXPECT_EQ(run_eval(tmp / "run", 32, false), plain);
  const std::string sliding = run_eval(tmp / "run", 8, true);
  const std::string last = sliding.substr(sliding.rfind("split=test"));
  EXPECT_EQ(field(last, "tokens"), field(plain, "tokens"));
  EXPECT_NE(field(last, "loss"), field(plain, "loss"));
  // Positions 1..24 occur only in the first window (later windows score positions 25..32).
  EXPECT_EQ(sliding.rfind("positions=1-1 tokens=1 ", 0), 0u) << sliding;
  EXPECT_NE(sliding.find("\npositions=8-15 tokens=8 "), std::string::npos) << sliding;

  train_tiny("tiny_masked_lm", "{lrpe {}}", tmp / "mlm");
  EvalRequest mlm = test_split_request(tmp / "mlm", 32);
  mlm.stride = 8;
  EXPECT_NE(refusal(mlm).find("--stride: sliding evaluation windows apply to causal language "
                              "models"),
            std::string::npos);
}

// --set on a model field that changes the model's shape is refused naming the field and both
// values, not as a list of every tensor that no longer fits.
TEST(EvalOverrides, AModelOfAnotherShapeIsRefusedNamingTheChangedFields) {
  TempDir dir;
  const fs::path run = dir.path() / "run";
  train_tiny("tiny_causal_lm", "{lrpe {type: 2}}", run);
  EvalRequest args = test_split_request(run, 0);
  args.batches = 1;
  args.overrides = {"model.layers=3", "model.ffn_width=48"};
  const std::string message = refusal(args);
  EXPECT_NE(message.find("model.layers: 2 -> 3"), std::string::npos) << message;
  EXPECT_NE(message.find("model.ffn_width: 64 -> 48"), std::string::npos) << message;
  EXPECT_NE(message.find("leave these model fields out of --set"), std::string::npos) << message;
  EXPECT_EQ(message.find("problem(s)"), std::string::npos) << message;
  // A field that keeps the shape (the attention's chunk) evaluates.
  args.overrides = {"model.attention.linear.chunk_size=4"};
  const EvalOutput out = captured_evaluation(args);
  EXPECT_NE(out.metrics.find("loss="), std::string::npos) << out.metrics;
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::app
