// The MPI transport: collectives over MPI_COMM_WORLD (built only with ROTA_WITH_MPI).
#pragma once

#include <vector>

#include "framework/distributed/communicator.h"

namespace rota::distributed {

/// Collectives between the ranks of MPI_COMM_WORLD. MPI must be initialised first (launch.h:
/// process_communicator() does it). Only the thread that initialised MPI may call it.
///
/// Sums: with 2 ranks MPI_Allreduce (one addition per element, x_0 + x_1 = x_1 + x_0, so the
/// order is fixed anyway); with more ranks, where MPI_Allreduce's association depends on the
/// algorithm MPI picks, a reduce-scatter done by hand keeps rank order: MPI_Alltoallv sends chunk
/// r of every rank's buffer to rank r, rank r adds the pieces in rank order, MPI_Allgatherv
/// returns the summed chunks to everyone. Same traffic as a ring allreduce (2 (W-1)/W of the
/// buffer per rank), one more latency.
class MpiCommunicator : public Communicator {
 public:
  MpiCommunicator();
  int rank() const override { return rank_; }
  int world_size() const override { return world_; }
  std::string description() const override;
  void allreduce_sum(std::span<float> values) override;
  void allreduce_sum(std::span<double> values) override;
  void allreduce_sum(std::span<int64_t> values) override;
  void broadcast(std::span<std::byte> bytes, int root) override;
  void barrier() override;
  /// MPI_Abort on MPI_COMM_WORLD: mpirun ends every rank and exits with `exit_code`.
  [[noreturn]] void abort(const std::string& message, int exit_code) override;

 private:
  int rank_ = 0;
  int world_ = 1;
  std::vector<std::byte> scratch_;  // the reduce-scatter's receive buffer
};

}  // namespace rota::distributed
