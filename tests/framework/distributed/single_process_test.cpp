// The single-process communicator and the helpers on top of it with one rank: collectives are the
// identity, sharded sums are plain in-order sums, errors propagate unchanged.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "framework/distributed/communicator.h"
#include "framework/distributed/gradient_allreduce.h"
#include "framework/distributed/replica_check.h"
#include "framework/distributed/run_guard.h"
#include "framework/distributed/sharded_sums.h"
#include "framework/distributed/single_process_communicator.h"
#include "framework/tensor/random.h"

namespace rota::distributed {
namespace ROTA_TEST_FILE_NS {

TEST(SingleProcessCommunicator, CollectivesLeaveTheDataAsItIs) {
  SingleProcessCommunicator comm;
  EXPECT_EQ(comm.rank(), 0);
  EXPECT_EQ(comm.world_size(), 1);
  std::vector<float> f = {1.5f, -2.0f, 1e-30f};
  std::vector<double> d = {3.25, -0.0};
  std::vector<int64_t> i = {int64_t{1} << 62, -7};
  comm.allreduce_sum(std::span<float>(f));
  comm.allreduce_sum(std::span<double>(d));
  comm.allreduce_sum(std::span<int64_t>(i));
  EXPECT_EQ(f, (std::vector<float>{1.5f, -2.0f, 1e-30f}));
  EXPECT_EQ(d, (std::vector<double>{3.25, -0.0}));
  EXPECT_EQ(i, (std::vector<int64_t>{int64_t{1} << 62, -7}));
  std::string bytes = "abc";
  comm.broadcast(std::as_writable_bytes(std::span<char>(bytes.data(), bytes.size())), 0);
  EXPECT_EQ(bytes, "abc");
  EXPECT_THROW(comm.broadcast({}, 1), Error);
  comm.barrier();
  EXPECT_EQ(broadcast_string(comm, "hello"), "hello");
  const std::vector<int64_t> values = {4, 5, 6};
  EXPECT_EQ(allgather(comm, values), values);
}

TEST(ShardedSums, OneRankDoesEveryItemAndAddsThemInOrder) {
  SingleProcessCommunicator comm;
  // Values whose float sum depends on the order: the result must be the left-to-right sum.
  const std::vector<double> values = {1e16, 1.0, -1e16, 1.0, 3.5};
  ShardedSums sums(comm, static_cast<int64_t>(values.size()), 1, 1);
  double expected = 0;
  int64_t expected_count = 0;
  for (int64_t i = 0; i < static_cast<int64_t>(values.size()); ++i) {
    ASSERT_TRUE(sums.mine(i));
    sums.set(i, {{values[static_cast<size_t>(i)]}}, {{i + 1}});
    expected += values[static_cast<size_t>(i)];
    expected_count += i + 1;
  }
  const ShardedSums::Totals totals = sums.totals();
  EXPECT_EQ(totals.doubles[0], expected);
  EXPECT_EQ(totals.ints[0], expected_count);
  EXPECT_THROW(sums.set(9, {{1.0}}, {{1}}), Error);       // not an item
  EXPECT_THROW(sums.set(0, {{1.0, 2.0}}, {{1}}), Error);  // wrong width
}

TEST(GradientAllreduce, OneRankKeepsGradientsAndSkipsFrozenParameters) {
  SingleProcessCommunicator comm;
  Generator gen(3);
  Variable a(randn({3, 4}, gen), true), b(randn({5}, gen), true), frozen(randn({2}, gen), false);
  a.set_grad(randn({3, 4}, gen));
  const std::vector<double> before = a.grad().to_double_vector();
  GradientAllreduce reducer(comm, {a, frozen, b}, /*bucket_bytes=*/16);
  EXPECT_EQ(reducer.trainable_count(), 2u);
  EXPECT_EQ(reducer.local_gradient_flags(), (std::vector<int64_t>{1, 0}));
  reducer.sum(std::vector<int64_t>{1, 0});
  EXPECT_EQ(a.grad().to_double_vector(), before);
  EXPECT_FALSE(b.grad().defined());  // no rank had one
  EXPECT_EQ(reducer.last_bucket_count(), 0);
  EXPECT_THROW(reducer.sum(std::vector<int64_t>{1}), Error);
}

TEST(ReplicaCheck, HashSeesEveryBitShapeAndOrder) {
  Generator gen(5);
  const Tensor x = randn({4, 3}, gen), y = randn({7}, gen);
  const uint64_t h = hash_tensors({x, y});
  EXPECT_EQ(hash_tensors({x.clone(), y.clone()}), h);
  EXPECT_NE(hash_tensors({y, x}), h);
  EXPECT_NE(hash_tensors({x.reshape({3, 4}), y}), h);
  Tensor flipped = x.clone();
  uint32_t bits;
  float value = flipped.data<float>()[5];
  std::memcpy(&bits, &value, 4);
  bits ^= 1u;  // the lowest mantissa bit
  std::memcpy(&value, &bits, 4);
  flipped.data<float>()[5] = value;
  EXPECT_NE(hash_tensors({flipped, y}), h);
  SingleProcessCommunicator comm;
  EXPECT_EQ(check_replicas_identical(comm, {x, y}, "weights"), h);
}

TEST(RunOnEveryRank, OneRankLetsEveryErrorThrough) {
  SingleProcessCommunicator comm;
  auto code = [](const std::exception&) { return 7; };
  EXPECT_EQ(run_on_every_rank(
                comm, [] { return 3; }, code),
            3);
  EXPECT_THROW(run_on_every_rank(
                   comm, []() -> int { throw CollectiveError("all of us", 2); }, code),
               CollectiveError);
  EXPECT_THROW(run_on_every_rank(
                   comm, []() -> int { throw std::runtime_error("only me"); }, code),
               std::runtime_error);
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::distributed
