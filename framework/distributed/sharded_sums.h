// Work items (evaluation batches) split across ranks, their sums added up in item order.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "framework/distributed/communicator.h"

namespace rota::distributed {

/// `items` work items, item i done by rank i % world_size, each contributing a few doubles and
/// int64s (e.g. loss x count and count of one evaluation batch). totals() gathers every item's
/// values and adds them up in item order on every rank, starting from 0: exactly the arithmetic
/// of one process running all items in order, so the totals are bit-identical to it (given
/// bit-identical items) whatever the number of ranks.
class ShardedSums {
 public:
  ShardedSums(Communicator& comm, int64_t items, int64_t doubles_per_item, int64_t ints_per_item);

  /// Whether this rank does item `item`.
  bool mine(int64_t item) const { return item % comm_.world_size() == comm_.rank(); }
  /// Records the values of one of this rank's items (items not recorded count as zeros).
  void set(int64_t item, std::span<const double> doubles, std::span<const int64_t> ints = {});

  struct Totals {
    std::vector<double> doubles;  // [doubles_per_item]
    std::vector<int64_t> ints;    // [ints_per_item]
  };
  /// Collective: the per-item values summed in item order.
  Totals totals();

 private:
  Communicator& comm_;
  int64_t items_, doubles_per_item_, ints_per_item_;
  std::vector<double> doubles_;  // [items, doubles_per_item]
  std::vector<int64_t> ints_;    // [items, ints_per_item]
};

}  // namespace rota::distributed
