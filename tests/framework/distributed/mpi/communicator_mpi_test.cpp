// MPI collectives on 2 or 3 ranks: sums are rank-ordered and bit-identical on every rank, for
// buffer sizes below, around and above the rank count; integers exact; broadcast from any root.
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "framework/distributed/communicator.h"
#include "tests/framework/distributed/mpi/mpi_world.h"

namespace rota::distributed {
namespace ROTA_TEST_FILE_NS {

using testing::rank_ordered_sum;
using testing::rank_values;
using testing::world;

TEST(MpiCommunicator, RankAndWorldSizeComeFromTheLauncher) {
  const char* size = std::getenv("OMPI_COMM_WORLD_SIZE");
  const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
  ASSERT_NE(size, nullptr) << "run under mpirun";
  EXPECT_EQ(world().world_size(), std::atoi(size));
  EXPECT_EQ(world().rank(), std::atoi(rank));
  EXPECT_GT(world().world_size(), 1);
  EXPECT_NE(world().description().find("MPI"), std::string::npos) << world().description();
}

template <typename T>
void expect_rank_ordered_sums(uint64_t seed) {
  Communicator& comm = world();
  for (size_t n : {size_t{0}, size_t{1}, size_t{2}, size_t{5}, size_t{1000}, size_t{65537}}) {
    std::vector<T> values = rank_values<T>(comm.rank(), n, seed + n);
    comm.allreduce_sum(std::span<T>(values));
    const std::vector<T> expected = rank_ordered_sum<T>(comm.world_size(), n, seed + n);
    size_t mismatches = 0;
    for (size_t i = 0; i < n; ++i) {
      // Bitwise: the same additions in the same order.
      mismatches += std::memcmp(&values[i], &expected[i], sizeof(T)) != 0;
    }
    EXPECT_EQ(mismatches, 0u) << n << " elements on rank " << comm.rank();
  }
}

TEST(MpiCommunicator, FloatSumsAreRankOrderedBitForBit) {
  expect_rank_ordered_sums<float>(11);
}

TEST(MpiCommunicator, DoubleSumsAreRankOrderedBitForBit) {
  expect_rank_ordered_sums<double>(12);
}

TEST(MpiCommunicator, TheTestDataIsOrderSensitive) {
  // Three ranks' values added in another association give other bits, so the tests above can
  // tell a rank-ordered sum from another one (with 2 ranks there is only one order anyway).
  const size_t n = 65537;
  const std::vector<float> ordered = rank_ordered_sum<float>(3, n, 11 + n);
  const std::vector<float> x0 = rank_values<float>(0, n, 11 + n);
  const std::vector<float> x1 = rank_values<float>(1, n, 11 + n);
  const std::vector<float> x2 = rank_values<float>(2, n, 11 + n);
  size_t differ = 0;
  for (size_t i = 0; i < n; ++i) differ += ordered[i] != x0[i] + (x1[i] + x2[i]);
  EXPECT_GT(differ, n / 100);
}

TEST(MpiCommunicator, IntegerSumsAreExact) {
  Communicator& comm = world();
  const int64_t big = int64_t{1} << 52;
  std::vector<int64_t> values = {comm.rank() + 1, big + comm.rank(), -3 * comm.rank()};
  comm.allreduce_sum(std::span<int64_t>(values));
  const int64_t w = comm.world_size();
  EXPECT_EQ(values, (std::vector<int64_t>{w * (w + 1) / 2, w * big + w * (w - 1) / 2,
                                          -3 * w * (w - 1) / 2}));
}

TEST(MpiCommunicator, BroadcastCopiesTheRootsBytes) {
  Communicator& comm = world();
  for (int root = 0; root < comm.world_size(); ++root) {
    std::string text = comm.rank() == root ? std::string("from root ") + std::to_string(root)
                                           : std::string(11, '?');
    text.resize(11, ' ');
    comm.broadcast(std::as_writable_bytes(std::span<char>(text.data(), text.size())), root);
    EXPECT_EQ(text, "from root " + std::to_string(root));
    // Strings of a length only the root knows.
    const std::string long_text(100000 + root, static_cast<char>('a' + root));
    EXPECT_EQ(broadcast_string(comm, comm.rank() == root ? long_text : "", root), long_text);
  }
}

TEST(MpiCommunicator, AllgatherConcatenatesInRankOrder) {
  Communicator& comm = world();
  const std::vector<int64_t> mine = {comm.rank(), 10 * comm.rank()};
  std::vector<int64_t> expected;
  for (int r = 0; r < comm.world_size(); ++r) {
    expected.push_back(r);
    expected.push_back(10 * r);
  }
  EXPECT_EQ(allgather(comm, mine), expected);
  comm.barrier();
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::distributed
