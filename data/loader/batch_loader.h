// Batch loader: deterministic per-epoch shuffling, a resumable cursor, sharding by rank.
#pragma once

#include <cstdint>
#include <vector>

#include "data/loader/loader_cursor.h"

namespace rota::data {

struct LoaderOptions {
  /// Examples per batch on each rank; a global batch has batch_size * world_size examples.
  int64_t batch_size = 1;
  /// Shuffle each epoch (a permutation seeded from (seed, epoch)); false = index order.
  bool shuffle = true;
  /// Skip the incomplete last global batch of an epoch (training: every rank gets full,
  /// equal batches); false keeps it (evaluation: every example exactly once).
  bool drop_last = true;
  uint64_t seed = 0;
  /// Data-parallel shard of this process: rank in [0, world_size).
  int64_t rank = 0;
  int64_t world_size = 1;
};

/// The example indices of one batch on this rank.
struct LoaderBatch {
  std::vector<int64_t> indices;
  int64_t epoch = 0;
  /// Index of the global batch within its epoch.
  int64_t step_in_epoch = 0;
};

/// Hands out batches of example indices for a dataset of a given size, epoch after epoch.
///
/// Order: epoch e uses one global order of all examples, the same on every rank: a
/// Fisher-Yates permutation from Generator(mix_seed(seed, e)) when shuffling, else 0..N-1.
/// Sharding: global batch g covers positions [p, p + G) of that order, G = batch_size *
/// world_size, p = the cursor position; rank r takes positions [p + r * batch_size,
/// p + (r + 1) * batch_size). The ranks' parts of every global batch are thus disjoint and
/// together cover it. An incomplete last global batch of R < G examples (drop_last = false)
/// is split into contiguous parts of floor(R * (r + 1) / W) - floor(R * r / W) examples, which
/// may be empty on some ranks.
/// Resume: the cursor (epoch, position) says where the next global batch starts, so a
/// restored loader continues exactly; position counts examples, so it stays meaningful if the
/// world size changes between runs.
class BatchLoader {
 public:
  BatchLoader(int64_t dataset_size, const LoaderOptions& options);

  /// The next batch for this rank; moves to the next epoch when the current one is done.
  LoaderBatch next();
  /// Global batches per epoch.
  int64_t batches_per_epoch() const;

  LoaderCursor cursor() const { return cursor_; }
  /// Continues from a saved cursor (validated against the dataset size).
  void restore(const LoaderCursor& cursor);

  /// The global order of an epoch (identical on every rank).
  std::vector<int64_t> epoch_order(int64_t epoch) const;

  int64_t dataset_size() const { return size_; }
  const LoaderOptions& options() const { return options_; }

 private:
  // The epoch's order as 32-bit indices (the dataset size is below 2^32, checked): 4 bytes per
  // example held for the whole run, not 8.
  const std::vector<uint32_t>& order_for(int64_t epoch);
  template <typename Index>
  std::vector<Index> shuffled(int64_t epoch) const;

  int64_t size_;
  LoaderOptions options_;
  LoaderCursor cursor_;
  int64_t cached_epoch_ = -1;
  std::vector<uint32_t> cached_order_;
};

}  // namespace rota::data
