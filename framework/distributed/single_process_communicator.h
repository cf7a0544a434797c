// The communicator of a job with one process: every collective is the identity.
#pragma once

#include <memory>

#include "framework/distributed/communicator.h"

namespace rota::distributed {

/// Rank 0 of a world of 1; needs no MPI.
class SingleProcessCommunicator : public Communicator {
 public:
  int rank() const override { return 0; }
  int world_size() const override { return 1; }
  std::string description() const override { return "single process"; }
  void allreduce_sum(std::span<float>) override {}
  void allreduce_sum(std::span<double>) override {}
  void allreduce_sum(std::span<int64_t>) override {}
  void broadcast(std::span<std::byte>, int root) override;
  void barrier() override {}
  /// Prints the message and exits the process with `exit_code`.
  [[noreturn]] void abort(const std::string& message, int exit_code) override;
};

/// A shared single-process communicator (the default wherever none is given).
std::shared_ptr<Communicator> single_process();

}  // namespace rota::distributed
