// Aligned allocation for Storage.
#include "framework/tensor/storage.h"

#include <atomic>
#include <cstdlib>
#include <new>

namespace rota {

namespace {
constexpr size_t kAlignment = 64;
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

Storage::Storage(size_t nbytes) : nbytes_(nbytes) {
  // aligned_alloc needs a size that is a multiple of the alignment.
  const size_t rounded = ((nbytes + kAlignment - 1) / kAlignment) * kAlignment;
  data_ = std::aligned_alloc(kAlignment, rounded == 0 ? kAlignment : rounded);
  if (data_ == nullptr) throw std::bad_alloc();
  track_allocation(static_cast<int64_t>(nbytes_));
}

Storage::~Storage() {
  std::free(data_);
  track_allocation(-static_cast<int64_t>(nbytes_));
}

}  // namespace rota
