// Single-process communicator (see single_process_communicator.h).
#include "framework/distributed/single_process_communicator.h"

#include <cstdio>
#include <cstdlib>

namespace rota::distributed {

void SingleProcessCommunicator::broadcast(std::span<std::byte>, int root) {
  ROTA_CHECK(root == 0, "broadcast: root {} is not a rank of a single-process job", root);
}

void SingleProcessCommunicator::abort(const std::string& message, int exit_code) {
  std::fflush(stdout);
  std::fprintf(stderr, "error: %s\n", message.c_str());
  std::fflush(stderr);
  std::exit(exit_code);
}

std::shared_ptr<Communicator> single_process() {
  static const std::shared_ptr<Communicator> instance =
      std::make_shared<SingleProcessCommunicator>();
  return instance;
}

}  // namespace rota::distributed
