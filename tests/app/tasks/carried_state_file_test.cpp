// The carried-state checkpoint file: written and read back lane for lane, every mismatch with the
// run refused by name, and the ranks' lanes joined in rank order.
#include "app/tasks/carried_state_file.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "framework/tensor/random.h"
#include "tests/framework/distributed/thread_group.h"
#include "tests/support/expect_error.h"

namespace rota::app {
namespace ROTA_TEST_FILE_NS {

using rota::testing::expect_error;

// Two blocks' states for `lanes` lanes: [lanes, 2, 3, 4] and [lanes, 2, 3, 5] (a denominator
// column), f32, with distinct values.
std::vector<Tensor> states_for(int64_t lanes, uint64_t seed) {
  Generator gen(seed);
  return {randn({lanes, 2, 3, 4}, gen), randn({lanes, 2, 3, 5}, gen)};
}

CarriedStateExpectation expectation(int64_t lanes, int64_t position) {
  return {lanes, position, {zeros({1, 2, 3, 4}), zeros({1, 2, 3, 5})}};
}

TEST(CarriedStateFile, ReadsBackTheRequestedLanesBitForBit) {
  const std::vector<Tensor> states = states_for(6, 1);
  const std::string bytes = encode_carried_states(states, /*position=*/96, /*lanes=*/6);
  for (const auto& [first, count] :
       std::vector<std::pair<int64_t, int64_t>>{{0, 6}, {2, 2}, {5, 1}}) {
    const models::CausalLm::CarriedState carried =
        decode_carried_states(bytes, "f", expectation(6, 96), first, count);
    EXPECT_EQ(carried.position, 96);
    ASSERT_EQ(carried.states.size(), 2u);
    for (size_t i = 0; i < 2; ++i) {
      EXPECT_EQ(carried.states[i].shape()[0], count);
      EXPECT_EQ(carried.states[i].to_double_vector(),
                states[i].narrow(0, first, count).contiguous().to_double_vector());
    }
  }
  // Position 0: the start of the lanes, no states.
  const std::string start = encode_carried_states({}, 0, 6);
  EXPECT_TRUE(decode_carried_states(start, "f", expectation(6, 0), 0, 3).states.empty());
}

TEST(CarriedStateFile, RefusesAFileThatDoesNotFitTheRun) {
  const std::string bytes = encode_carried_states(states_for(4, 2), 64, 4);
  expect_error([&] { decode_carried_states(bytes, "c.st", expectation(8, 64), 0, 1); },
               "c.st: written by a run with 4 lanes, but this run reads 8");
  expect_error([&] { decode_carried_states(bytes, "c.st", expectation(4, 32), 0, 1); },
               "the states are for position 64 of each lane, but the data cursor's next window "
               "starts at position 32");
  CarriedStateExpectation three_blocks = expectation(4, 64);
  three_blocks.one_lane_states.push_back(zeros({1, 2, 3, 4}));
  expect_error([&] { decode_carried_states(bytes, "c.st", three_blocks, 0, 1); },
               "2 states, but the model has 3 blocks");
  CarriedStateExpectation wider = expectation(4, 64);
  wider.one_lane_states[1] = zeros({1, 2, 3, 6});
  expect_error([&] { decode_carried_states(bytes, "c.st", wider, 0, 1); },
               "'block.1' is f32 [4,2,3,5], but this model's state is f32 [4,2,3,6]");
  CarriedStateExpectation doubles = expectation(4, 64);
  doubles.one_lane_states[0] = zeros({1, 2, 3, 4}, DType::kF64);
  expect_error([&] { decode_carried_states(bytes, "c.st", doubles, 0, 1); }, "but this model's");
  expect_error([&] { decode_carried_states(bytes, "c.st", expectation(4, 64), 3, 2); },
               "lanes [3, 5) outside [0, 4)");
  std::string corrupted = bytes;
  corrupted[corrupted.size() - 3] ^= 0x10;
  expect_error([&] { decode_carried_states(corrupted, "c.st", expectation(4, 64), 0, 1); }, "c.st");
  expect_error(
      [&] { decode_carried_states(bytes.substr(0, 20), "c.st", expectation(4, 64), 0, 1); },
      "c.st");
  // Position 0 with states in it is not a file this code wrote.
  expect_error(
      [&] {
        decode_carried_states(encode_carried_states(states_for(4, 3), 0, 4), "c.st",
                              expectation(4, 0), 0, 1);
      },
      "states at position 0");
}

// Three ranks of two lanes each: every rank gets the six lanes in rank order.
TEST(CarriedStateFile, GatheringJoinsTheRanksLanesInRankOrder) {
  const int world = 3;
  const std::vector<Tensor> all = states_for(2 * world, 4);
  distributed::testing::ThreadGroup group(world);
  std::vector<std::vector<double>> joined(world);
  group.run([&](distributed::Communicator& comm) {
    std::vector<Tensor> mine;
    for (const Tensor& s : all) mine.push_back(s.narrow(0, 2 * comm.rank(), 2).contiguous());
    const std::vector<Tensor> gathered = gather_lane_states(comm, mine);
    ASSERT_EQ(gathered.size(), 2u);
    for (const Tensor& g : gathered) {
      const std::vector<double> v = g.to_double_vector();
      joined[comm.rank()].insert(joined[comm.rank()].end(), v.begin(), v.end());
    }
    // No states anywhere (the start of the lanes): none gathered.
    EXPECT_TRUE(gather_lane_states(comm, {}).empty());
  });
  std::vector<double> expected;
  for (const Tensor& s : all) {
    const std::vector<double> v = s.to_double_vector();
    expected.insert(expected.end(), v.begin(), v.end());
  }
  for (int r = 0; r < world; ++r) EXPECT_EQ(joined[r], expected) << "rank " << r;
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::app
