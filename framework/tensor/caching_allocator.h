// Caching allocator behind Storage: large blocks in size classes, reused from free lists.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>

namespace rota {

/// How a CachingAllocator behaves. storage_allocator() takes these from the environment.
struct CachingAllocatorOptions {
  /// Keep freed large blocks for reuse. Off: every request goes to std::aligned_alloc/free
  /// (the behaviour before the cache existed; AddressSanitizer then sees every use-after-free).
  bool caching = true;
  /// Most bytes kept cached but unused; beyond it the oldest cached blocks go back to the OS.
  size_t cache_limit_bytes = size_t{2048} << 20;
  /// Requests of at least this many bytes are large: size-classed, mmap'd and cached.
  /// Smaller ones always use std::aligned_alloc. At least 4096.
  size_t large_threshold_bytes = size_t{64} << 10;
};

/// Options from the environment, read through `getenv` (tests pass a fake environment):
///   ROTA_CACHING_ALLOCATOR=0|1  caching off / on; default on, off when built with AddressSanitizer
///   ROTA_ALLOCATOR_CACHE_MB=N   cache_limit_bytes = N MiB (default 2048; 0 caches nothing)
/// Throws std::invalid_argument for any other value.
CachingAllocatorOptions caching_allocator_options_from_env(
    const std::function<const char*(const char*)>& getenv);

/// Counters of one allocator. Bytes are size-class bytes (what the OS provided), not requested
/// bytes: Storage's own live/peak stats (storage_stats()) count requested bytes.
struct AllocatorStats {
  int64_t cached_bytes = 0;     ///< in free lists, ready for reuse
  int64_t reserved_bytes = 0;   ///< large blocks held from the OS: in use + cached
  int64_t hits = 0;             ///< large requests served from the cache
  int64_t misses = 0;           ///< large requests that went to the OS
  int64_t released_blocks = 0;  ///< cached blocks given back to the OS (over the limit, or release)
};

/// Bytes reserved for a large request of `nbytes`: the next size of the form 2^k * (4 + j) / 4
/// (j = 0..3; a quarter-power-of-two step), at least a 4 KiB page multiple. Waste < 25 %.
size_t large_size_class(size_t nbytes);

/// 64-byte aligned blocks. Large requests are rounded up to large_size_class() and mmap'd
/// (blocks of 2 MiB and more 2 MiB-aligned with MADV_HUGEPAGE), and freed ones are kept per class
/// and handed out again (last freed first). Thread-safe (one mutex). Every block must be freed
/// (with its requested size) before the allocator is destroyed.
class CachingAllocator {
 public:
  explicit CachingAllocator(CachingAllocatorOptions options = {});
  /// Gives the cached blocks back to the OS.
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  /// A 64-byte aligned block of at least `nbytes` (uninitialised; zero bytes gives a valid
  /// block). Throws std::bad_alloc when the OS has no memory left, even after the cache is emptied.
  void* allocate(size_t nbytes);
  /// Frees a block from allocate(nbytes) of this allocator (same `nbytes`).
  void deallocate(void* data, size_t nbytes);
  /// Gives every cached block back to the OS; blocks in use are untouched.
  void release_cached_memory();

  AllocatorStats stats() const;
  const CachingAllocatorOptions& options() const { return options_; }

 private:
  struct CachedBlock {
    void* data;
    uint64_t freed_at;  // order of deallocation: the smallest is the oldest
  };
  /// Removes the oldest cached block (caller holds mutex_) and returns it with its class bytes.
  std::pair<void*, size_t> pop_oldest_locked();

  const CachingAllocatorOptions options_;
  mutable std::mutex mutex_;
  std::map<size_t, std::deque<CachedBlock>> free_lists_;  // class bytes -> blocks, oldest first
  uint64_t free_counter_ = 0;
  AllocatorStats stats_;
};

/// The process-wide allocator behind every Storage; options from the environment on first use.
/// Never destroyed, so tensors freed during static destruction are safe.
CachingAllocator& storage_allocator();
/// storage_allocator().stats().
AllocatorStats allocator_stats();
/// Gives storage_allocator()'s cached blocks back to the OS.
void release_cached_memory();

}  // namespace rota
