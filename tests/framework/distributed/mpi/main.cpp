// Runs the MPI tests on every rank (under mpirun); the job fails when any rank has a failure.
#include <gtest/gtest.h>

#include "tests/framework/distributed/mpi/mpi_world.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  rota::distributed::Communicator& comm = rota::distributed::testing::world();
  const int result = RUN_ALL_TESTS();
  int64_t failed_ranks = result != 0 ? 1 : 0;
  comm.allreduce_sum(std::span<int64_t>(&failed_ranks, 1));
  if (comm.rank() == 0) {
    std::printf("[ %d ranks ] %s\n", comm.world_size(),
                failed_ranks == 0 ? "all ranks passed"
                                  : (std::to_string(failed_ranks) + " rank(s) failed").c_str());
  }
  return failed_ranks == 0 ? 0 : 1;
}
