// The communicator the MPI tests run on (this process's: MPI under mpirun) and rank-aware helpers.
#pragma once

#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include "framework/distributed/launch.h"
#include "framework/tensor/random.h"

namespace rota::distributed::testing {

inline Communicator& world() {
  static const std::shared_ptr<Communicator> comm = process_communicator();
  return *comm;
}

/// Rank r's test values, computable on every rank: n floats spread over 24 binades with both
/// signs, so that the order in which ranks' values are added changes the rounded sum.
template <typename T>
std::vector<T> rank_values(int rank, size_t n, uint64_t seed) {
  Generator gen(seed * 1000003 + static_cast<uint64_t>(rank));
  std::vector<T> values(n);
  for (T& v : values) {
    const double magnitude = std::ldexp(1.0, static_cast<int>(gen.next_below(24)) - 12);
    v = static_cast<T>(gen.next_normal() * magnitude);
  }
  return values;
}

/// The sum of every rank's rank_values added in rank order, ((x_0 + x_1) + x_2) + ...
template <typename T>
std::vector<T> rank_ordered_sum(int world_size, size_t n, uint64_t seed) {
  std::vector<T> sum = rank_values<T>(0, n, seed);
  for (int r = 1; r < world_size; ++r) {
    const std::vector<T> x = rank_values<T>(r, n, seed);
    for (size_t i = 0; i < n; ++i) sum[i] = sum[i] + x[i];
  }
  return sum;
}

}  // namespace rota::distributed::testing
