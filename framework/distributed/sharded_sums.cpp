// Item-ordered sums over ranks (see sharded_sums.h).
#include "framework/distributed/sharded_sums.h"

#include <algorithm>

namespace rota::distributed {

ShardedSums::ShardedSums(Communicator& comm, int64_t items, int64_t doubles_per_item,
                         int64_t ints_per_item)
    : comm_(comm),
      items_(items),
      doubles_per_item_(doubles_per_item),
      ints_per_item_(ints_per_item),
      doubles_(static_cast<size_t>(items * doubles_per_item), 0.0),
      ints_(static_cast<size_t>(items * ints_per_item), 0) {
  ROTA_CHECK(items >= 0 && doubles_per_item >= 0 && ints_per_item >= 0,
             "ShardedSums: negative size ({} items, {} doubles, {} ints)", items, doubles_per_item,
             ints_per_item);
}

void ShardedSums::set(int64_t item, std::span<const double> doubles,
                      std::span<const int64_t> ints) {
  ROTA_CHECK(item >= 0 && item < items_ && mine(item),
             "ShardedSums: item {} is not one of rank {}'s {} items", item, comm_.rank(), items_);
  ROTA_CHECK(static_cast<int64_t>(doubles.size()) == doubles_per_item_ &&
                 static_cast<int64_t>(ints.size()) == ints_per_item_,
             "ShardedSums: item {} has {} doubles and {} ints, expected {} and {}", item,
             doubles.size(), ints.size(), doubles_per_item_, ints_per_item_);
  std::copy(doubles.begin(), doubles.end(), doubles_.begin() + item * doubles_per_item_);
  std::copy(ints.begin(), ints.end(), ints_.begin() + item * ints_per_item_);
}

ShardedSums::Totals ShardedSums::totals() {
  // Every item is nonzero on one rank only, so the rank sums are exact copies (x + 0 = x).
  comm_.allreduce_sum(std::span<double>(doubles_));
  comm_.allreduce_sum(std::span<int64_t>(ints_));
  Totals totals{std::vector<double>(static_cast<size_t>(doubles_per_item_), 0.0),
                std::vector<int64_t>(static_cast<size_t>(ints_per_item_), 0)};
  for (int64_t item = 0; item < items_; ++item) {
    for (int64_t k = 0; k < doubles_per_item_; ++k) {
      totals.doubles[k] += doubles_[item * doubles_per_item_ + k];
    }
    for (int64_t k = 0; k < ints_per_item_; ++k) totals.ints[k] += ints_[item * ints_per_item_ + k];
  }
  return totals;
}

}  // namespace rota::distributed
