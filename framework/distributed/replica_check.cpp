// Replica hashes (see replica_check.h).
#include "framework/distributed/replica_check.h"

#include "framework/base/seed_mix.h"

#include <cstring>

#include <fmt/format.h>

namespace rota::distributed {
namespace {

// 64-bit multiply-xorshift mixing, 8 bytes at a time (a few GB/s).
struct Hasher {
  uint64_t state = kGoldenGamma;
  void add(uint64_t word) {
    state = hash_combine(state, word);
    state *= 0xBF58476D1CE4E5B9ull;
    state ^= state >> 31;
  }
  void add_bytes(const unsigned char* bytes, size_t size) {
    size_t i = 0;
    for (; i + 8 <= size; i += 8) {
      uint64_t word;
      std::memcpy(&word, bytes + i, 8);
      add(word);
    }
    uint64_t tail = 0;
    std::memcpy(&tail, bytes + i, size - i);
    add(tail ^ (static_cast<uint64_t>(size - i) << 56));
  }
};

}  // namespace

uint64_t hash_tensors(const std::vector<Tensor>& tensors) {
  Hasher hasher;
  for (const Tensor& tensor : tensors) {
    if (!tensor.defined()) {
      hasher.add(0xDEADull);
      continue;
    }
    hasher.add(static_cast<uint64_t>(tensor.dtype()));
    for (int64_t d : tensor.shape()) hasher.add(static_cast<uint64_t>(d));
    const Tensor contiguous = tensor.contiguous();
    hasher.add_bytes(static_cast<const unsigned char*>(contiguous.raw_data()), contiguous.nbytes());
  }
  return hasher.state;
}

uint64_t check_replicas_identical(Communicator& comm, const std::vector<Tensor>& tensors,
                                  const std::string& what) {
  const uint64_t hash = hash_tensors(tensors);
  if (comm.world_size() == 1) return hash;
  const int64_t mine = static_cast<int64_t>(hash);
  const std::vector<int64_t> all = allgather(comm, std::span<const int64_t>(&mine, 1));
  std::string differing;
  size_t first = 0;
  for (size_t r = 1; r < all.size(); ++r) {
    if (all[r] == all[0]) continue;
    if (first == 0) first = r;
    differing += fmt::format("{}{}", differing.empty() ? "" : ", ", r);
  }
  if (first != 0) {
    throw CollectiveError(fmt::format(
        "distributed: the {} of rank(s) {} differ from rank 0's (hash {:016x} on rank {}, {:016x} "
        "on rank 0); the ranks no longer train the same model",
        what, differing, static_cast<uint64_t>(all[first]), first, static_cast<uint64_t>(all[0])));
  }
  return hash;
}

}  // namespace rota::distributed
