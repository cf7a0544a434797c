// Deterministic, resumable, sharded batch order.
#include "data/loader/batch_loader.h"

#include <numeric>

#include "framework/base/error.h"
#include "framework/base/seed_mix.h"
#include "framework/tensor/random.h"

namespace rota::data {

BatchLoader::BatchLoader(int64_t dataset_size, const LoaderOptions& options)
    : size_(dataset_size), options_(options) {
  ROTA_CHECK(dataset_size > 0, "loader: the dataset is empty");
  ROTA_CHECK(dataset_size <= int64_t{0xFFFFFFFF},
             "loader: {} examples are more than the 4,294,967,295 one epoch order can hold; use "
             "longer sequences (fewer windows)",
             dataset_size);
  ROTA_CHECK(options.batch_size > 0, "loader: batch_size must be positive, got {}",
             options.batch_size);
  ROTA_CHECK(options.world_size > 0 && options.rank >= 0 && options.rank < options.world_size,
             "loader: rank {} is not in [0, world_size = {})", options.rank, options.world_size);
  ROTA_CHECK(!options.drop_last || dataset_size >= options.batch_size * options.world_size,
             "loader: {} examples are fewer than one global batch ({} per rank x {} ranks); use a "
             "smaller batch or drop_last = false",
             dataset_size, options.batch_size, options.world_size);
}

int64_t BatchLoader::batches_per_epoch() const {
  const int64_t global = options_.batch_size * options_.world_size;
  return options_.drop_last ? size_ / global : (size_ + global - 1) / global;
}

template <typename Index>
std::vector<Index> BatchLoader::shuffled(int64_t epoch) const {
  std::vector<Index> order(static_cast<size_t>(size_));
  std::iota(order.begin(), order.end(), Index{0});
  if (!options_.shuffle) return order;
  Generator gen(mix_seed({options_.seed, static_cast<uint64_t>(epoch)}));
  for (int64_t i = size_ - 1; i > 0; --i) {
    std::swap(order[i], order[gen.next_below(static_cast<uint64_t>(i) + 1)]);
  }
  return order;
}

std::vector<int64_t> BatchLoader::epoch_order(int64_t epoch) const {
  return shuffled<int64_t>(epoch);
}

const std::vector<uint32_t>& BatchLoader::order_for(int64_t epoch) {
  if (cached_epoch_ != epoch) {
    cached_order_ = shuffled<uint32_t>(epoch);
    cached_epoch_ = epoch;
  }
  return cached_order_;
}

LoaderBatch BatchLoader::next() {
  const int64_t global = options_.batch_size * options_.world_size;
  const int64_t remaining = size_ - cursor_.position;
  if (remaining <= 0 || (options_.drop_last && remaining < global)) {
    ++cursor_.epoch;
    cursor_.position = 0;
  }
  const int64_t start = cursor_.position;
  const int64_t take = std::min(global, size_ - start);
  int64_t begin, end;  // this rank's part of [start, start + take)
  if (take == global) {
    begin = start + options_.rank * options_.batch_size;
    end = begin + options_.batch_size;
  } else {
    begin = start + take * options_.rank / options_.world_size;
    end = start + take * (options_.rank + 1) / options_.world_size;
  }
  const std::vector<uint32_t>& order = order_for(cursor_.epoch);
  LoaderBatch batch;
  batch.indices.assign(order.begin() + begin, order.begin() + end);
  batch.epoch = cursor_.epoch;
  batch.step_in_epoch = start / global;
  cursor_.position = start + take;
  return batch;
}

void BatchLoader::restore(const LoaderCursor& cursor) {
  ROTA_CHECK(cursor.epoch >= 0 && cursor.position >= 0 && cursor.position <= size_,
             "loader: cursor (epoch {}, position {}) does not fit a dataset of {} examples",
             cursor.epoch, cursor.position, size_);
  cursor_ = cursor;
}

}  // namespace rota::data
