// Failure handling across ranks (see run_guard.h).
#include "framework/distributed/run_guard.h"

#include <cstdio>
#include <cstdlib>
#include <string>

namespace rota::distributed {

int run_on_every_rank(Communicator& comm, const std::function<int()>& body,
                      const std::function<int(const std::exception&)>& exit_code_of) {
  if (comm.world_size() == 1) return body();
  std::string message;
  int exit_code = 1;
  try {
    return body();
  } catch (const CollectiveError& e) {
    if (comm.rank() == 0) {
      std::fflush(stdout);
      std::fprintf(stderr, "error: %s\n", e.what());
      std::fflush(stderr);
    }
    return e.exit_code();
  } catch (const std::exception& e) {
    message = e.what();
    exit_code = exit_code_of(e);
  } catch (...) {
    message = "unknown exception";
  }
  comm.abort(message, exit_code);
  std::_Exit(exit_code);  // not reached: abort() ends the process
}

}  // namespace rota::distributed
