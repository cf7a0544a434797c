// Storage's memory (from the caching allocator) and its live/peak byte counts.
#include "framework/tensor/storage.h"

#include <atomic>

#include "framework/tensor/caching_allocator.h"

namespace rota {

namespace {
std::atomic<int64_t> g_live_bytes{0};
std::atomic<int64_t> g_peak_bytes{0};

void track_allocation(int64_t delta) {
  const int64_t now = g_live_bytes.fetch_add(delta, std::memory_order_relaxed) + delta;
  int64_t peak = g_peak_bytes.load(std::memory_order_relaxed);
  while (now > peak && !g_peak_bytes.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}
}  // namespace

StorageStats storage_stats() {
  return StorageStats{g_live_bytes.load(std::memory_order_relaxed),
                      g_peak_bytes.load(std::memory_order_relaxed)};
}

void reset_storage_peak() {
  g_peak_bytes.store(g_live_bytes.load(std::memory_order_relaxed), std::memory_order_relaxed);
}

// Live and peak bytes count requested bytes, not the allocator's size classes.
Storage::Storage(size_t nbytes) : nbytes_(nbytes) {
  data_ = storage_allocator().allocate(nbytes);
  track_allocation(static_cast<int64_t>(nbytes_));
}

Storage::~Storage() {
  storage_allocator().deallocate(data_, nbytes_);
  track_allocation(-static_cast<int64_t>(nbytes_));
}

}  // namespace rota
