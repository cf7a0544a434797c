// Which communicator this process uses: MPI when an MPI launcher started several ranks, else none.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "framework/distributed/communicator.h"

namespace rota::distributed {

/// How this process was started, from the environment MPI launchers set: Open MPI's mpirun
/// (OMPI_COMM_WORLD_SIZE / _RANK), MPICH / Intel MPI Hydra (PMI_SIZE / PMI_RANK), MVAPICH
/// (MV2_COMM_WORLD_SIZE / _RANK), PMIx launchers such as srun --mpi=pmix (PMIX_RANK; no size).
struct LaunchInfo {
  bool launched = false;  // an MPI launcher started this process
  int world_size = 1;     // processes the launcher started; 0 when it does not say
  int rank = 0;
  std::string source;  // the variable the world size came from, e.g. "OMPI_COMM_WORLD_SIZE"
};

/// Reads LaunchInfo through `getenv` (tests pass a fake environment).
LaunchInfo detect_launch(const std::function<const char*(const char*)>& getenv);
/// This process's LaunchInfo.
LaunchInfo detect_launch();

/// Whether this build has the MPI transport (cmake -DROTA_WITH_MPI=ON, on when MPI is found).
bool built_with_mpi();

enum class Transport { kSingleProcess, kMpi };

/// kMpi when a launcher started more than one process (or did not say how many) and `with_mpi`;
/// kSingleProcess otherwise, also in an MPI build: a plain `rota train` never touches MPI.
/// Throws when a launcher started several processes but `with_mpi` is false (each would train
/// alone and they would overwrite each other's run).
Transport choose_transport(const LaunchInfo& launch, bool with_mpi);

/// The communicator of this process, created on the first call (later calls return it). For
/// kMpi it initialises MPI (MPI_Init_thread, MPI_THREAD_FUNNELED: only the calling thread talks
/// MPI; OpenMP threads compute) and registers MPI_Finalize to run at normal exit.
std::shared_ptr<Communicator> process_communicator();

/// Whether this process has initialised MPI (false for single-process runs, even in MPI builds).
bool mpi_initialized();

}  // namespace rota::distributed
