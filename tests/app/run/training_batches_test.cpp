// Training batches without training: the micro-batches rota train's task draws, in its order,
// continued exactly from a state or from a run's checkpoint.
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "app/run/exit_codes.h"
#include "app/run/train_run.h"
#include "app/run/training_batches.h"
#include "app/tasks/causal_lm_task.h"
#include "app/tasks/classifier_task.h"
#include "app/tasks/masked_lm_task.h"
#include "framework/autograd/grad_mode.h"
#include "recipes/recipe_error.h"
#include "tests/support/expect_error.h"
#include "tests/support/source_tree.h"
#include "tests/support/temp_dir.h"

namespace rota::app {
namespace ROTA_TEST_FILE_NS {

namespace fs = std::filesystem;
using rota::testing::TempDir;

TrainingBatchesRequest request_for(const std::string& recipe, std::vector<std::string> overrides) {
  TrainingBatchesRequest request;
  request.recipe = std::string(ROTA_SOURCE_DIR) + "/recipes/tests/" + recipe + ".txtpb";
  request.overrides = std::move(overrides);
  return request;
}

// The loss `task`'s model gives `batch`, computed as the task's next_micro_batch computes it.
double loss_of(Task& task, const TrainingBatch& batch) {
  if (auto* causal = dynamic_cast<CausalLmTask*>(&task)) {
    return causal->causal_lm().loss(batch.tokens, batch.targets, batch.segment_ids).item();
  }
  if (auto* masked = dynamic_cast<MaskedLmTask*>(&task)) {
    return masked->masked_lm()
        .loss(batch.tokens, batch.targets, batch.mask, batch.segment_ids)
        .item();
  }
  auto& classifier = dynamic_cast<ClassifierTask&>(task);
  return classifier.classifier().loss(batch.tokens, batch.mask, batch.labels).item();
}

bool same_ids(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape()) return false;
  const Tensor x = a.contiguous(), y = b.contiguous();
  return std::equal(x.data<int64_t>(), x.data<int64_t>() + x.numel(), y.data<int64_t>());
}

struct Case {
  const char* recipe;
  std::vector<std::string> overrides;
};

class TrainingBatchesTest : public ::testing::TestWithParam<Case> {};

// Each batch is the one the training task's next_micro_batch uses: a task that trains (whose
// model has the same initial weights) gets from its own draw the loss its model gives ours.
TEST_P(TrainingBatchesTest, AreTheBatchesTheTrainingTaskDrawsInItsOrder) {
  const TrainingBatchesRequest request = request_for(GetParam().recipe, GetParam().overrides);
  TrainingBatches batches(request);
  TrainingBatches training(request);  // its task stands for rota train's
  EXPECT_EQ(batches.total(), 6 * batches.micro_batches_per_step());
  NoGradGuard no_grad;
  for (int i = 0; i < 5; ++i) {
    const TrainingBatch batch = batches.next();
    const double drawn_by_training = training.task().next_micro_batch().loss.item();
    EXPECT_EQ(loss_of(training.task(), batch), drawn_by_training) << "micro-batch " << i;
  }
}

// A state taken after k batches continues in a fresh iterator with batch k + 1; all total()
// batches can be drawn and no more.
TEST_P(TrainingBatchesTest, ContinueFromTheirStateAndEndWithTheRun) {
  const TrainingBatchesRequest request = request_for(GetParam().recipe, GetParam().overrides);
  TrainingBatches whole(request);
  std::vector<TrainingBatch> all;
  TrainingBatchesState middle;
  while (!whole.done()) {
    if (all.size() == 3) middle = whole.state();
    all.push_back(whole.next());
  }
  EXPECT_EQ(static_cast<int64_t>(all.size()), whole.total());
  rota::testing::expect_error([&] { whole.next(); }, "have been drawn");
  TrainingBatches continued(request);
  continued.restore(middle);
  EXPECT_EQ(continued.drawn(), 3);
  for (size_t i = 3; i < all.size(); ++i) {
    const TrainingBatch batch = continued.next();
    EXPECT_TRUE(same_ids(batch.tokens, all[i].tokens)) << "micro-batch " << i;
    EXPECT_EQ(batch.epoch, all[i].epoch);
  }
  EXPECT_TRUE(continued.done());
}

INSTANTIATE_TEST_SUITE_P(
    Tasks, TrainingBatchesTest,
    ::testing::Values(Case{"tiny_causal_lm", {"train.steps=6", "train.gradient_accumulation=2"}},
                      Case{"tiny_masked_lm", {"train.steps=6"}},
                      Case{"tiny_classifier", {"train.steps=6", "data.shuffle=true"}}));

// resume_from a run interrupted by --stop-after continues its cursor: the next batch is the
// one rota train --resume would draw.
TEST(TrainingBatches, ResumeFromARunContinuesItsCursor) {
  TempDir dir;
  const std::vector<std::string> overrides = {"train.steps=6", "train.gradient_accumulation=2",
                                              "train.eval_every=0", "train.eval_batches=1"};
  TrainRequest train;
  train.recipe = std::string(ROTA_SOURCE_DIR) + "/recipes/tests/tiny_causal_lm.txtpb";
  train.out = (dir.path() / "run").string();
  train.overrides = overrides;
  train.stop_after = 2;
  ::testing::internal::CaptureStdout();
  const int code = run_training(train);
  ::testing::internal::GetCapturedStdout();
  ASSERT_EQ(code, kExitOk);

  TrainingBatchesRequest request = request_for("tiny_causal_lm", overrides);
  TrainingBatches fresh(request);
  std::vector<TrainingBatch> all;
  while (!fresh.done()) all.push_back(fresh.next());
  request.resume_from = (dir.path() / "run").string();
  TrainingBatches resumed(request);
  EXPECT_EQ(resumed.drawn(), 4);  // 2 steps of 2 micro-batches
  for (size_t i = 4; i < all.size(); ++i) {
    EXPECT_TRUE(same_ids(resumed.next().tokens, all[i].tokens)) << "micro-batch " << i;
  }
  EXPECT_TRUE(resumed.done());
}

TEST(TrainingBatches, CarriedStateIsRefused) {
  TrainingBatches batches(request_for("tiny_causal_lm", {"train.carry_state=true"}));
  EXPECT_THROW(batches.next(), recipes::RecipeError);
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::app
