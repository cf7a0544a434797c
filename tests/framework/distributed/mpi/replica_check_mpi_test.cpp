// Replica check across ranks: identical tensors pass with one hash; a rank whose tensors differ by
// one bit makes every rank throw the same CollectiveError naming it.
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "framework/distributed/replica_check.h"
#include "tests/framework/distributed/mpi/mpi_world.h"

namespace rota::distributed {
namespace ROTA_TEST_FILE_NS {

using testing::world;

TEST(ReplicaCheck, IdenticalReplicasPassWithTheSameHashOnEveryRank) {
  Communicator& comm = world();
  Generator gen(21);
  const std::vector<Tensor> tensors = {randn({16, 8}, gen), randn({5}, gen)};
  const int64_t hash = static_cast<int64_t>(check_replicas_identical(comm, tensors, "weights"));
  const std::vector<int64_t> all = allgather(comm, std::span<const int64_t>(&hash, 1));
  for (int64_t h : all) EXPECT_EQ(h, hash);
  EXPECT_EQ(static_cast<uint64_t>(hash), hash_tensors(tensors));
}

TEST(ReplicaCheck, ARankThatDivergedIsNamedOnEveryRank) {
  Communicator& comm = world();
  Generator gen(22);
  Tensor weights = randn({16, 8}, gen);
  const int last = comm.world_size() - 1;
  if (comm.rank() == last)
    weights.data<float>()[7] = std::nextafter(weights.data<float>()[7], 1.0f);
  std::string message;
  try {
    check_replicas_identical(comm, {weights}, "weights");
  } catch (const CollectiveError& e) {
    message = e.what();
  }
  EXPECT_NE(message.find("rank(s) " + std::to_string(last) + " differ"), std::string::npos)
      << "rank " << comm.rank() << ": '" << message << "'";
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::distributed
