// The collective operations data-parallel training needs, independent of the transport (MPI or
// none).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "framework/base/error.h"

namespace rota::distributed {

/// The ranks of a data-parallel job and the collectives between them. Every collective must be
/// called by every rank, in the same order, with buffers of the same length.
class Communicator {
 public:
  virtual ~Communicator() = default;

  /// This process's rank in [0, world_size()).
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  /// "single process" or e.g. "MPI (Open MPI v4.1.4), 2 ranks".
  virtual std::string description() const = 0;

  /// Element-wise sum over the ranks, in place. Every rank receives the same bits, and
  /// floating-point values are added in rank order, ((x_0 + x_1) + x_2) + ..., whatever the
  /// transport does internally, so results do not depend on timing or on the MPI library.
  virtual void allreduce_sum(std::span<float> values) = 0;
  virtual void allreduce_sum(std::span<double> values) = 0;
  virtual void allreduce_sum(std::span<int64_t> values) = 0;
  /// Copies `root`'s bytes into every other rank's buffer (the same length on every rank).
  virtual void broadcast(std::span<std::byte> bytes, int root) = 0;
  /// Returns when every rank has called it.
  virtual void barrier() = 0;
  /// Ends the whole job, every rank, with `exit_code` after printing `message` (naming this
  /// rank) to stderr. For a failure on one rank: the others would otherwise wait for it in a
  /// collective forever.
  [[noreturn]] virtual void abort(const std::string& message, int exit_code) = 0;
};

/// A failure that every rank raises at the same point of the program (decided from values all
/// ranks share after a collective, e.g. a non-finite reduced loss), so no rank is left waiting in
/// a collective: such errors can end each rank normally instead of aborting the job.
class CollectiveError : public Error {
 public:
  explicit CollectiveError(const std::string& message, int exit_code = 1)
      : Error(message), exit_code_(exit_code) {}
  /// The process exit code this failure should end the command with.
  int exit_code() const { return exit_code_; }

 private:
  int exit_code_;
};

/// `value` on `root`, copied to every rank (collective).
std::string broadcast_string(Communicator& comm, const std::string& value, int root = 0);
/// Every rank's `values` (the same length on every rank) concatenated in rank order, on every
/// rank (collective).
std::vector<int64_t> allgather(Communicator& comm, std::span<const int64_t> values);

}  // namespace rota::distributed
