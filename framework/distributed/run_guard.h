// Running a command on every rank so that a failure on one rank ends the job instead of hanging it.
#pragma once

#include <exception>
#include <functional>

#include "framework/distributed/communicator.h"

namespace rota::distributed {

/// Runs `body` (a whole command on this rank) and returns its exit code.
/// With one rank, exceptions propagate unchanged.
/// With several ranks:
/// - a CollectiveError (every rank throws it at the same point) is printed by rank 0 only
///   ("error: ..."), and every rank returns its exit_code(): the job ends normally;
/// - any other exception ends the whole job through Communicator::abort (MPI_Abort), printing
///   the message with this rank's number and exiting with `exit_code_of(exception)`: the other
///   ranks may be waiting for this one in a collective and would otherwise wait forever.
int run_on_every_rank(Communicator& comm, const std::function<int()>& body,
                      const std::function<int(const std::exception&)>& exit_code_of);

}  // namespace rota::distributed
