// Collective helpers built on the Communicator primitives.
#include "framework/distributed/communicator.h"

#include <algorithm>

namespace rota::distributed {

std::string broadcast_string(Communicator& comm, const std::string& value, int root) {
  if (comm.world_size() == 1) return value;
  int64_t size = comm.rank() == root ? static_cast<int64_t>(value.size()) : 0;
  comm.broadcast(std::as_writable_bytes(std::span<int64_t>(&size, 1)), root);
  std::string result = comm.rank() == root ? value : std::string(static_cast<size_t>(size), '\0');
  comm.broadcast(std::as_writable_bytes(std::span<char>(result.data(), result.size())), root);
  return result;
}

std::vector<int64_t> allgather(Communicator& comm, std::span<const int64_t> values) {
  // Each rank fills its own slot and leaves the others 0: the integer sum is the concatenation.
  const size_t n = values.size();
  std::vector<int64_t> all(n * static_cast<size_t>(comm.world_size()), 0);
  std::copy(values.begin(), values.end(), all.begin() + static_cast<ptrdiff_t>(n * comm.rank()));
  comm.allreduce_sum(std::span<int64_t>(all));
  return all;
}

}  // namespace rota::distributed
