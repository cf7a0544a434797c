// The recipe tasks across ranks: sharded evaluation gives one process's numbers bit for bit (loss
// sums, counts, confusion matrix), and every rank's dropout stream is saved and restored.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "app/setup/tokenizer_setup.h"
#include "app/tasks/causal_lm_task.h"
#include "app/tasks/classifier_task.h"
#include "app/tasks/masked_lm_task.h"
#include "framework/autograd/grad_mode.h"
#include "framework/distributed/single_process_communicator.h"
#include "recipes/loader.h"
#include "recipes/recipe_error.h"
#include "tests/framework/distributed/mpi/mpi_world.h"
#include "tests/support/source_tree.h"

namespace rota::app {
namespace ROTA_TEST_FILE_NS {

using distributed::testing::world;

TaskInputs inputs_for(const std::string& recipe_name, std::vector<std::string> overrides,
                      std::shared_ptr<distributed::Communicator> comm) {
  TaskInputs inputs;
  inputs.recipe = recipes::load_recipe(
      std::string(ROTA_SOURCE_DIR) + "/recipes/tests/" + recipe_name + ".txtpb", overrides);
  inputs.tokenizer = obtain_tokenizer(inputs.recipe, std::nullopt, inputs.data_options);
  inputs.communicator = std::move(comm);
  return inputs;
}

std::shared_ptr<distributed::Communicator> world_ptr() {
  return distributed::process_communicator();
}

// Evaluates `split` with one process and sharded over the ranks (the same initial weights).
void expect_sharded_evaluation_equals_one_process(const std::string& recipe,
                                                  const std::string& split, int64_t max_batches) {
  // batch_size 12 = 2 x 2 x 3: splits over 2 and 3 ranks with accumulation 2.
  const std::vector<std::string> overrides = {"data.batch_size=12",
                                              "train.gradient_accumulation=2"};
  std::unique_ptr<Task> alone =
      make_task(inputs_for(recipe, overrides, distributed::single_process()));
  std::unique_ptr<Task> sharded = make_task(inputs_for(recipe, overrides, world_ptr()));
  EXPECT_EQ(sharded->eval_batch_size(), alone->eval_batch_size());
  EXPECT_EQ(sharded->micro_batch_size() * world().world_size(), alone->micro_batch_size());
  NoGradGuard no_grad;
  alone->model().eval();
  sharded->model().eval();
  const train::Metrics expected = alone->evaluate_split(split, max_batches);
  const train::Metrics actual = sharded->evaluate_split(split, max_batches);
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(actual[i].first, expected[i].first);
    // Bitwise: the same batches, summed in the same order.
    EXPECT_EQ(actual[i].second, expected[i].second)
        << recipe << " " << expected[i].first << " on rank " << world().rank();
  }
}

TEST(ShardedEvaluation, CausalLmEqualsOneProcess) {
  // 7 batches: the ranks get different numbers of them.
  expect_sharded_evaluation_equals_one_process("tiny_causal_lm", "valid", 7);
}

TEST(ShardedEvaluation, MaskedLmEqualsOneProcess) {
  expect_sharded_evaluation_equals_one_process("tiny_masked_lm", "valid", 5);
}

TEST(ShardedEvaluation, ClassifierEqualsOneProcessOnTheWholeSplit) {
  // Every batch of SST-2's dev split (the last one incomplete): loss, accuracy, MCC, count.
  expect_sharded_evaluation_equals_one_process("tiny_classifier", "valid", 0);
}

// A causal LM task that shows its dropout stream.
class DropoutVisibleTask : public CausalLmTask {
 public:
  using CausalLmTask::CausalLmTask;
  Generator& dropout_stream() { return *dropout_gen_; }
};

TEST(TaskState, EveryRanksDropoutStreamIsSavedAndRestored) {
  distributed::Communicator& comm = world();
  DropoutVisibleTask task(
      inputs_for("tiny_causal_lm", {"model.dropout=0.1", "data.batch_size=12"}, world_ptr()));
  for (int i = 0; i <= comm.rank(); ++i) task.dropout_stream().next_u64();
  const Generator::State mine = task.dropout_stream().state();
  io::TrainState state;
  state.set_step(3);
  task.save_state(state);
  EXPECT_EQ(state.data_cursor().num_shards(), comm.world_size());
  ASSERT_EQ(state.rng_states_size(), comm.world_size());
  // This rank's entry holds this rank's stream; the streams of different ranks differ.
  const std::string name =
      comm.rank() == 0 ? "dropout" : "dropout.rank" + std::to_string(comm.rank());
  Generator saved;
  io::restore_rng_state(state, name, saved);
  EXPECT_EQ(saved.state(), mine);
  const std::vector<int64_t> firsts =
      distributed::allgather(comm, std::vector<int64_t>{static_cast<int64_t>(mine[0])});
  for (size_t r = 1; r < firsts.size(); ++r) EXPECT_NE(firsts[r], firsts[0]);

  // A fresh task restoring the state continues this rank's stream.
  DropoutVisibleTask restored(
      inputs_for("tiny_causal_lm", {"model.dropout=0.1", "data.batch_size=12"}, world_ptr()));
  restored.restore_state(state);
  EXPECT_EQ(restored.dropout_stream().state(), mine);
}

TEST(TaskState, ASingleProcessStateGivesTheExtraRanksFreshDistinctStreams) {
  distributed::Communicator& comm = world();
  DropoutVisibleTask alone(inputs_for("tiny_causal_lm", {"model.dropout=0.1", "data.batch_size=12"},
                                      distributed::single_process()));
  alone.dropout_stream().next_u64();
  io::TrainState state;
  state.set_step(5);
  alone.save_state(state);
  ASSERT_EQ(state.rng_states_size(), 1);
  DropoutVisibleTask task(
      inputs_for("tiny_causal_lm", {"model.dropout=0.1", "data.batch_size=12"}, world_ptr()));
  task.restore_state(state);
  const Generator::State got = task.dropout_stream().state();
  if (comm.rank() == 0) {
    EXPECT_EQ(got, alone.dropout_stream().state());
  }
  const std::vector<int64_t> firsts =
      distributed::allgather(comm, std::vector<int64_t>{static_cast<int64_t>(got[0])});
  for (size_t a = 0; a < firsts.size(); ++a) {
    for (size_t b = a + 1; b < firsts.size(); ++b) EXPECT_NE(firsts[a], firsts[b]);
  }
}

TEST(TaskState, AGlobalBatchThatDoesNotSplitOverTheRanksIsARecipeError) {
  // 6 sequences with accumulation 2: 3 per micro-step, which 2 ranks cannot share (3 can).
  const std::vector<std::string> overrides = {"data.batch_size=6", "train.gradient_accumulation=2"};
  if (world().world_size() == 3) {
    EXPECT_NO_THROW(make_task(inputs_for("tiny_causal_lm", overrides, world_ptr())));
  } else {
    try {
      make_task(inputs_for("tiny_causal_lm", overrides, world_ptr()));
      ADD_FAILURE() << "expected a recipe error";
    } catch (const recipes::RecipeError& e) {
      EXPECT_NE(std::string(e.what()).find("data.batch_size"), std::string::npos) << e.what();
    }
  }
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::app
