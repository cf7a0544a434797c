// Checking that every rank holds the same model: hashes of the tensors compared across ranks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "framework/distributed/communicator.h"
#include "framework/tensor/tensor.h"

namespace rota::distributed {

/// A 64-bit hash of the elements of `tensors` (their bytes in row-major order, shapes and
/// dtypes included), in order. Equal tensors give equal hashes; any changed bit changes it with
/// overwhelming probability.
uint64_t hash_tensors(const std::vector<Tensor>& tensors);

/// Collective: compares hash_tensors(tensors) across the ranks. Returns the hash when all ranks
/// agree; otherwise throws a CollectiveError on every rank (they all see every hash) naming the
/// ranks whose `what` differs from rank 0's.
uint64_t check_replicas_identical(Communicator& comm, const std::vector<Tensor>& tensors,
                                  const std::string& what);

}  // namespace rota::distributed
