// Choosing the transport: launcher detection, the no-MPI refusal, and that a process started
// without mpirun runs alone without touching MPI (in any build).
#include "framework/distributed/launch.h"

#include <map>
#include <string>

#include <gtest/gtest.h>

#include "framework/distributed/single_process_communicator.h"
#include "tests/support/expect_error.h"

namespace rota::distributed {
namespace ROTA_TEST_FILE_NS {

using rota::testing::expect_error;

// A fake environment for detect_launch.
LaunchInfo launch_with(const std::map<std::string, std::string>& env) {
  return detect_launch([&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

TEST(DetectLaunch, NoLauncherVariablesMeansAPlainProcess) {
  const LaunchInfo info = launch_with({{"PATH", "/usr/bin"}});
  EXPECT_FALSE(info.launched);
  EXPECT_EQ(info.world_size, 1);
  EXPECT_EQ(info.rank, 0);
}

TEST(DetectLaunch, ReadsOpenMpiMpichMvapichAndPmix) {
  LaunchInfo info = launch_with({{"OMPI_COMM_WORLD_SIZE", "4"}, {"OMPI_COMM_WORLD_RANK", "3"}});
  EXPECT_TRUE(info.launched);
  EXPECT_EQ(info.world_size, 4);
  EXPECT_EQ(info.rank, 3);
  EXPECT_EQ(info.source, "OMPI_COMM_WORLD_SIZE");

  info = launch_with({{"PMI_SIZE", "2"}, {"PMI_RANK", "1"}});
  EXPECT_EQ(info.world_size, 2);
  EXPECT_EQ(info.rank, 1);
  EXPECT_EQ(info.source, "PMI_SIZE");

  info = launch_with({{"MV2_COMM_WORLD_SIZE", "8"}, {"MV2_COMM_WORLD_RANK", "5"}});
  EXPECT_EQ(info.world_size, 8);
  EXPECT_EQ(info.rank, 5);

  // PMIx says the rank but not the size: "ask MPI".
  info = launch_with({{"PMIX_RANK", "2"}});
  EXPECT_TRUE(info.launched);
  EXPECT_EQ(info.world_size, 0);
  EXPECT_EQ(info.rank, 2);
}

TEST(DetectLaunch, RefusesACountThatIsNotANumber) {
  EXPECT_THROW(launch_with({{"OMPI_COMM_WORLD_SIZE", "two"}}), Error);
  EXPECT_THROW(launch_with({{"PMI_SIZE", "-1"}}), Error);
}

TEST(ChooseTransport, OneProcessNeverUsesMpi) {
  for (bool with_mpi : {false, true}) {
    EXPECT_EQ(choose_transport(LaunchInfo{}, with_mpi), Transport::kSingleProcess);
    EXPECT_EQ(choose_transport(LaunchInfo{true, 1, 0, "OMPI_COMM_WORLD_SIZE"}, with_mpi),
              Transport::kSingleProcess);
  }
}

TEST(ChooseTransport, SeveralProcessesUseMpiWhenBuiltIn) {
  EXPECT_EQ(choose_transport(LaunchInfo{true, 2, 1, "OMPI_COMM_WORLD_SIZE"}, true),
            Transport::kMpi);
  EXPECT_EQ(choose_transport(LaunchInfo{true, 0, 1, "PMIX_RANK"}, true), Transport::kMpi);
}

TEST(ChooseTransport, SeveralProcessesWithoutMpiAreRefusedWithTheReason) {
  expect_error(
      [&] {
        choose_transport(LaunchInfo{true, 2, 1, "OMPI_COMM_WORLD_SIZE"}, false);
      },
      {"2 processes", "without MPI", "ROTA_WITH_MPI"});
}

TEST(ProcessCommunicator, WithoutALauncherThisProcessRunsAloneAndNeverInitialisesMpi) {
  ASSERT_FALSE(detect_launch().launched) << "run this test without mpirun";
  const std::shared_ptr<Communicator> comm = process_communicator();
  EXPECT_EQ(comm->world_size(), 1);
  EXPECT_EQ(comm->rank(), 0);
  EXPECT_EQ(comm, process_communicator());  // one per process
  EXPECT_FALSE(mpi_initialized());          // also in a build with MPI
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::distributed
