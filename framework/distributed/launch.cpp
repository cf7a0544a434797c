// Launcher detection and the process-wide communicator (see launch.h).
#include "framework/distributed/launch.h"

#include <cstdlib>
#include <mutex>

#include "framework/distributed/single_process_communicator.h"

#ifdef ROTA_WITH_MPI
#include <mpi.h>

#include "framework/distributed/mpi_communicator.h"
#endif

namespace rota::distributed {
namespace {

int parse_count(const char* text, const char* name) {
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  ROTA_CHECK(end != text && *end == '\0' && value >= 0 && value < (1 << 24),
             "distributed: {}={} is not a process count", name, text);
  return static_cast<int>(value);
}

#ifdef ROTA_WITH_MPI
void finalize_mpi_at_exit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

std::shared_ptr<Communicator> start_mpi() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    std::atexit(finalize_mpi_at_exit);
    ROTA_CHECK(provided >= MPI_THREAD_FUNNELED,
               "distributed: the MPI library offers thread level {}, rota needs "
               "MPI_THREAD_FUNNELED",
               provided);
  }
  auto comm = std::make_shared<MpiCommunicator>();
  if (comm->world_size() == 1) return single_process();
  return comm;
}
#endif

}  // namespace

LaunchInfo detect_launch(const std::function<const char*(const char*)>& getenv) {
  static const char* const kVariables[][2] = {{"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK"},
                                              {"PMI_SIZE", "PMI_RANK"},
                                              {"MV2_COMM_WORLD_SIZE", "MV2_COMM_WORLD_RANK"}};
  LaunchInfo info;
  for (const auto& [size_name, rank_name] : kVariables) {
    const char* size = getenv(size_name);
    if (size == nullptr) continue;
    info.launched = true;
    info.world_size = parse_count(size, size_name);
    const char* rank = getenv(rank_name);
    info.rank = rank != nullptr ? parse_count(rank, rank_name) : 0;
    info.source = size_name;
    return info;
  }
  if (const char* rank = getenv("PMIX_RANK")) {
    info.launched = true;
    info.world_size = 0;
    info.rank = parse_count(rank, "PMIX_RANK");
    info.source = "PMIX_RANK";
  }
  return info;
}

LaunchInfo detect_launch() {
  return detect_launch([](const char* name) { return std::getenv(name); });
}

bool built_with_mpi() {
#ifdef ROTA_WITH_MPI
  return true;
#else
  return false;
#endif
}

Transport choose_transport(const LaunchInfo& launch, bool with_mpi) {
  if (!launch.launched || launch.world_size == 1) return Transport::kSingleProcess;
  if (!with_mpi) {
    fail(
        "distributed: an MPI launcher started {} processes ({}), but this rota was built without "
        "MPI; install libopenmpi-dev and rebuild (cmake -DROTA_WITH_MPI=ON), or run a single "
        "process without mpirun",
        launch.world_size > 0 ? std::to_string(launch.world_size) : std::string("several"),
        launch.source);
  }
  return Transport::kMpi;
}

std::shared_ptr<Communicator> process_communicator() {
  static std::mutex mutex;
  static std::shared_ptr<Communicator> instance;
  const std::lock_guard<std::mutex> lock(mutex);
  if (instance) return instance;
  if (choose_transport(detect_launch(), built_with_mpi()) == Transport::kSingleProcess) {
    instance = single_process();
  } else {
#ifdef ROTA_WITH_MPI
    instance = start_mpi();
#endif
  }
  return instance;
}

bool mpi_initialized() {
#ifdef ROTA_WITH_MPI
  int initialized = 0;
  MPI_Initialized(&initialized);
  return initialized != 0;
#else
  return false;
#endif
}

}  // namespace rota::distributed
