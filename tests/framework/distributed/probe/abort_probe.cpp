// A two-line MPI job for the failure tests: rank 1 throws while the others wait in a collective;
// run_on_every_rank must end the whole job (MPI_Abort) instead of leaving them waiting forever.
#include <cstdio>
#include <stdexcept>

#include "framework/distributed/launch.h"
#include "framework/distributed/run_guard.h"

int main() {
  const auto comm = rota::distributed::process_communicator();
  return rota::distributed::run_on_every_rank(
      *comm,
      [&] {
        if (comm->rank() == 1) throw std::runtime_error("probe failure on purpose");
        comm->barrier();  // rank 1 never arrives
        std::printf("rank %d passed the barrier\n", comm->rank());
        return 0;
      },
      [](const std::exception&) { return 3; });
}
