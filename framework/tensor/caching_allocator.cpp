// Size classes, free lists, huge-page mappings and the environment switches of the allocator.
#include "framework/tensor/caching_allocator.h"

#include <sys/mman.h>

#include <bit>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

// Under AddressSanitizer, caching is off by default so freed tensors are really freed; when it is
// turned on anyway, cached blocks are poisoned so a use after free is still reported.
#if defined(__SANITIZE_ADDRESS__)
#define ROTA_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ROTA_ASAN 1
#endif
#endif
#ifdef ROTA_ASAN
#include <sanitizer/asan_interface.h>
#endif

namespace rota {

namespace {

constexpr size_t kAlignment = 64;
constexpr size_t kPageBytes = size_t{4} << 10;
constexpr size_t kHugePageBytes = size_t{2} << 20;

#ifdef ROTA_ASAN
constexpr bool kBuiltWithAsan = true;
void poison(void* data, size_t nbytes) {
  ASAN_POISON_MEMORY_REGION(data, nbytes);
}
void unpoison(void* data, size_t nbytes) {
  ASAN_UNPOISON_MEMORY_REGION(data, nbytes);
}
#else
constexpr bool kBuiltWithAsan = false;
void poison(void*, size_t) {}
void unpoison(void*, size_t) {}
#endif

size_t round_up(size_t value, size_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

// The aligned_alloc path (small requests, and every request with caching off).
size_t small_block_bytes(size_t nbytes) {
  return nbytes == 0 ? kAlignment : round_up(nbytes, kAlignment);
}

void* allocate_small(size_t nbytes) {
  // aligned_alloc needs a size that is a multiple of the alignment.
  void* data = std::aligned_alloc(kAlignment, small_block_bytes(nbytes));
  if (data == nullptr) throw std::bad_alloc();
  return data;
}

// `class_bytes` (a page multiple) of fresh zero pages; 2 MiB-aligned and advised to use huge pages
// when at least 2 MiB. nullptr when the OS refuses.
void* map_block(size_t class_bytes) {
  if (class_bytes < kHugePageBytes) {
    void* data =
        mmap(nullptr, class_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return data == MAP_FAILED ? nullptr : data;
  }
  // Over-map by one huge page, then trim the unaligned head and the tail.
  const size_t mapped_bytes = class_bytes + kHugePageBytes;
  void* mapped =
      mmap(nullptr, mapped_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapped == MAP_FAILED) return nullptr;
  const uintptr_t begin = reinterpret_cast<uintptr_t>(mapped);
  const uintptr_t aligned = round_up(begin, kHugePageBytes);
  const uintptr_t end = begin + mapped_bytes;
  if (aligned > begin) munmap(mapped, aligned - begin);
  if (end > aligned + class_bytes) {
    munmap(reinterpret_cast<void*>(aligned + class_bytes), end - (aligned + class_bytes));
  }
  void* data = reinterpret_cast<void*>(aligned);
#ifdef MADV_HUGEPAGE
  madvise(data, class_bytes, MADV_HUGEPAGE);  // advice only: failure (no THP) is harmless
#endif
  return data;
}

void unmap_block(void* data, size_t class_bytes) {
  unpoison(data, class_bytes);  // the addresses may be mapped again for something else
  munmap(data, class_bytes);
}

bool caching_from_env(const char* value) {
  if (value == nullptr || *value == '\0') return !kBuiltWithAsan;
  const std::string text(value);
  if (text == "0") return false;
  if (text == "1") return true;
  throw std::invalid_argument("ROTA_CACHING_ALLOCATOR=" + text + ": expected 0 or 1");
}

size_t cache_limit_from_env(const char* value, size_t fallback) {
  if (value == nullptr || *value == '\0') return fallback;
  const std::string text(value);
  uint64_t mib = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), mib);
  if (error != std::errc() || end != text.data() + text.size() ||
      mib > (std::numeric_limits<size_t>::max() >> 20)) {
    throw std::invalid_argument("ROTA_ALLOCATOR_CACHE_MB=" + text +
                                ": expected a whole number of MiB (0 or more)");
  }
  return static_cast<size_t>(mib) << 20;
}

}  // namespace

CachingAllocatorOptions caching_allocator_options_from_env(
    const std::function<const char*(const char*)>& getenv) {
  CachingAllocatorOptions options;
  options.caching = caching_from_env(getenv("ROTA_CACHING_ALLOCATOR"));
  options.cache_limit_bytes =
      cache_limit_from_env(getenv("ROTA_ALLOCATOR_CACHE_MB"), options.cache_limit_bytes);
  return options;
}

size_t large_size_class(size_t nbytes) {
  if (nbytes > std::numeric_limits<size_t>::max() / 2) throw std::bad_alloc();
  if (nbytes <= kPageBytes) return kPageBytes;
  // Between 2^k and 2^(k+1), four steps of 2^(k-2) (never finer than a page).
  const size_t power = std::bit_floor(nbytes);
  const size_t step = power / 4 > kPageBytes ? power / 4 : kPageBytes;
  return round_up(nbytes, step);
}

CachingAllocator::CachingAllocator(CachingAllocatorOptions options) : options_(options) {
  if (options_.large_threshold_bytes < kPageBytes) {
    throw std::invalid_argument("CachingAllocator: large_threshold_bytes " +
                                std::to_string(options_.large_threshold_bytes) +
                                " is below one page (4096)");
  }
}

CachingAllocator::~CachingAllocator() {
  release_cached_memory();
}

void* CachingAllocator::allocate(size_t nbytes) {
  if (nbytes < options_.large_threshold_bytes) return allocate_small(nbytes);
  if (!options_.caching) {
    void* data = allocate_small(nbytes);
    const std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.misses;
    stats_.reserved_bytes += static_cast<int64_t>(small_block_bytes(nbytes));
    return data;
  }
  const size_t class_bytes = large_size_class(nbytes);
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    const auto list = free_lists_.find(class_bytes);
    if (list != free_lists_.end() && !list->second.empty()) {
      void* data = list->second.back().data;  // the most recently freed: likeliest still in cache
      list->second.pop_back();
      stats_.cached_bytes -= static_cast<int64_t>(class_bytes);
      ++stats_.hits;
      unpoison(data, class_bytes);
      return data;
    }
  }
  void* data = map_block(class_bytes);
  if (data == nullptr) {  // out of address space or memory: give the cache back and try once more
    release_cached_memory();
    data = map_block(class_bytes);
    if (data == nullptr) throw std::bad_alloc();
  }
  const std::lock_guard<std::mutex> lock(mutex_);
  ++stats_.misses;
  stats_.reserved_bytes += static_cast<int64_t>(class_bytes);
  return data;
}

void CachingAllocator::deallocate(void* data, size_t nbytes) {
  if (nbytes < options_.large_threshold_bytes) {
    std::free(data);
    return;
  }
  if (!options_.caching) {
    std::free(data);
    const std::lock_guard<std::mutex> lock(mutex_);
    stats_.reserved_bytes -= static_cast<int64_t>(small_block_bytes(nbytes));
    return;
  }
  const size_t class_bytes = large_size_class(nbytes);
  std::vector<std::pair<void*, size_t>> to_release;
  if (class_bytes > options_.cache_limit_bytes) {
    to_release.emplace_back(data, class_bytes);  // would never fit: straight back to the OS
    const std::lock_guard<std::mutex> lock(mutex_);
    stats_.reserved_bytes -= static_cast<int64_t>(class_bytes);
    ++stats_.released_blocks;
  } else {
    poison(data, class_bytes);  // before another thread can take it from the list
    const std::lock_guard<std::mutex> lock(mutex_);
    free_lists_[class_bytes].push_back(CachedBlock{data, free_counter_++});
    stats_.cached_bytes += static_cast<int64_t>(class_bytes);
    while (stats_.cached_bytes > static_cast<int64_t>(options_.cache_limit_bytes)) {
      to_release.push_back(pop_oldest_locked());
    }
  }
  for (const auto& [block, bytes] : to_release) unmap_block(block, bytes);
}

std::pair<void*, size_t> CachingAllocator::pop_oldest_locked() {
  auto oldest = free_lists_.end();
  for (auto list = free_lists_.begin(); list != free_lists_.end(); ++list) {
    if (list->second.empty()) continue;
    if (oldest == free_lists_.end() ||
        list->second.front().freed_at < oldest->second.front().freed_at) {
      oldest = list;
    }
  }
  const size_t class_bytes = oldest->first;
  void* data = oldest->second.front().data;
  oldest->second.pop_front();
  if (oldest->second.empty()) free_lists_.erase(oldest);
  stats_.cached_bytes -= static_cast<int64_t>(class_bytes);
  stats_.reserved_bytes -= static_cast<int64_t>(class_bytes);
  ++stats_.released_blocks;
  return {data, class_bytes};
}

void CachingAllocator::release_cached_memory() {
  std::vector<std::pair<void*, size_t>> to_release;
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [class_bytes, blocks] : free_lists_) {
      for (const CachedBlock& block : blocks) to_release.emplace_back(block.data, class_bytes);
      stats_.cached_bytes -= static_cast<int64_t>(class_bytes * blocks.size());
      stats_.reserved_bytes -= static_cast<int64_t>(class_bytes * blocks.size());
      stats_.released_blocks += static_cast<int64_t>(blocks.size());
    }
    free_lists_.clear();
  }
  for (const auto& [block, bytes] : to_release) unmap_block(block, bytes);
}

AllocatorStats CachingAllocator::stats() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

CachingAllocator& storage_allocator() {
  static CachingAllocator* const allocator = new CachingAllocator(
      caching_allocator_options_from_env([](const char* name) { return std::getenv(name); }));
  return *allocator;
}

AllocatorStats allocator_stats() {
  return storage_allocator().stats();
}

void release_cached_memory() {
  storage_allocator().release_cached_memory();
}

}  // namespace rota
