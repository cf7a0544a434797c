// Caching allocator: size classes, reuse, alignment, stats, the cache limit, threads, Storage
// stats.
#include "framework/tensor/caching_allocator.h"

#include <omp.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "framework/tensor/storage.h"
#include "framework/tensor/tensor.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

constexpr size_t kKiB = size_t{1} << 10;
constexpr size_t kMiB = size_t{1} << 20;

// Independent reference for large_size_class(n), n >= 64 KiB: the smallest 2^k * (4 + j) / 4
// (j = 0..3) not below n, found by walking every candidate in increasing order.
size_t reference_class(size_t nbytes) {
  for (size_t power = 64 * kKiB;; power *= 2) {
    for (size_t j = 0; j < 4; ++j) {
      const size_t candidate = power / 4 * (4 + j);
      if (candidate >= nbytes) return candidate;
    }
  }
}

CachingAllocatorOptions caching_options(size_t limit_bytes = 1024 * kMiB) {
  CachingAllocatorOptions options;
  options.caching = true;
  options.cache_limit_bytes = limit_bytes;
  options.large_threshold_bytes = 64 * kKiB;
  return options;
}

CachingAllocatorOptions disabled_options() {
  CachingAllocatorOptions options = caching_options();
  options.caching = false;
  return options;
}

// Writes every byte of the block, then checks it reads back.
void fill_and_check(void* data, size_t nbytes, unsigned char seed) {
  auto* bytes = static_cast<unsigned char*>(data);
  for (size_t i = 0; i < nbytes; ++i) bytes[i] = static_cast<unsigned char>(seed + i * 131);
  for (size_t i = 0; i < nbytes; ++i) {
    ASSERT_EQ(bytes[i], static_cast<unsigned char>(seed + i * 131)) << "byte " << i;
  }
}

TEST(LargeSizeClass, IsTheNextQuarterPowerOfTwoStep) {
  std::vector<size_t> sizes;
  for (size_t power = 64 * kKiB; power <= 4096 * kMiB; power *= 2) {
    for (size_t j = 0; j < 4; ++j) {
      const size_t boundary = power / 4 * (4 + j);
      for (size_t delta : {size_t{0}, size_t{1}, size_t{4095}, size_t{4096}}) {
        sizes.push_back(boundary - delta);
        sizes.push_back(boundary + delta);
      }
    }
  }
  for (size_t n = 64 * kKiB; n < 64 * kMiB; n = n * 9 / 8 + 777) sizes.push_back(n);
  for (size_t n : sizes) {
    if (n < 64 * kKiB) continue;
    const size_t cls = large_size_class(n);
    EXPECT_EQ(cls, reference_class(n)) << n;
    EXPECT_EQ(cls % 4096, 0u) << n;
    EXPECT_GE(cls, n);
    EXPECT_LT(static_cast<double>(cls), 1.25 * static_cast<double>(n)) << n;
  }
  EXPECT_EQ(large_size_class(1), 4096u);
}

TEST(CachingAllocator, ReusesTheSameBlockForTheSameClass) {
  CachingAllocator allocator(caching_options());
  const size_t n = 100'000;
  void* first = allocator.allocate(n);
  fill_and_check(first, n, 1);
  allocator.deallocate(first, n);
  // A different request size in the same class gets the freed block back.
  const size_t same_class = reference_class(n) - 5;
  ASSERT_EQ(reference_class(same_class), reference_class(n));
  void* second = allocator.allocate(same_class);
  EXPECT_EQ(second, first);
  fill_and_check(second, same_class, 2);
  // The next class up is a different list: a fresh block.
  const size_t next_class = reference_class(n) + 1;
  void* third = allocator.allocate(next_class);
  EXPECT_NE(third, first);
  const AllocatorStats stats = allocator.stats();
  EXPECT_EQ(stats.hits, 1);
  EXPECT_EQ(stats.misses, 2);
  allocator.deallocate(second, same_class);
  allocator.deallocate(third, next_class);
}

TEST(CachingAllocator, LastFreedIsReusedFirst) {
  CachingAllocator allocator(caching_options());
  const size_t n = 300 * kKiB;
  void* a = allocator.allocate(n);
  void* b = allocator.allocate(n);
  allocator.deallocate(a, n);
  allocator.deallocate(b, n);
  void* again = allocator.allocate(n);
  EXPECT_EQ(again, b);
  allocator.deallocate(again, n);
}

TEST(CachingAllocator, EveryBlockIs64ByteAligned) {
  std::vector<size_t> sizes;
  for (size_t n = 0; n <= 300; ++n) sizes.push_back(n);
  for (size_t n : {size_t{4095}, size_t{4097}, 64 * kKiB - 1, 64 * kKiB, 64 * kKiB + 1,
                   100'003 * size_t{1}, 2 * kMiB - 1, 2 * kMiB, 2 * kMiB + 3, 5 * kMiB + 17}) {
    sizes.push_back(n);
  }
  for (const CachingAllocatorOptions& options : {caching_options(), disabled_options()}) {
    CachingAllocator allocator(options);
    for (int round = 0; round < 2; ++round) {  // the second round is served from the cache
      for (size_t n : sizes) {
        void* data = allocator.allocate(n);
        ASSERT_NE(data, nullptr) << n;
        EXPECT_EQ(reinterpret_cast<uintptr_t>(data) % 64, 0u)
            << n << " caching " << options.caching;
        if (options.caching && n >= 2 * kMiB) {  // huge-page candidates start on a 2 MiB boundary
          EXPECT_EQ(reinterpret_cast<uintptr_t>(data) % (2 * kMiB), 0u) << n;
        }
        fill_and_check(data, n, static_cast<unsigned char>(n));
        allocator.deallocate(data, n);
      }
    }
  }
}

TEST(CachingAllocator, StatsCountHitsMissesCachedAndReservedBytes) {
  CachingAllocator allocator(caching_options());
  const size_t a_bytes = 70 * kKiB, b_bytes = 3 * kMiB + 5;
  const int64_t a_class = static_cast<int64_t>(reference_class(a_bytes));
  const int64_t b_class = static_cast<int64_t>(reference_class(b_bytes));

  void* small = allocator.allocate(1000);  // small requests bypass the cache and its counters
  allocator.deallocate(small, 1000);
  EXPECT_EQ(allocator.stats().misses, 0);
  EXPECT_EQ(allocator.stats().reserved_bytes, 0);

  void* a = allocator.allocate(a_bytes);
  void* b = allocator.allocate(b_bytes);
  AllocatorStats stats = allocator.stats();
  EXPECT_EQ(stats.misses, 2);
  EXPECT_EQ(stats.hits, 0);
  EXPECT_EQ(stats.cached_bytes, 0);
  EXPECT_EQ(stats.reserved_bytes, a_class + b_class);

  allocator.deallocate(a, a_bytes);
  stats = allocator.stats();
  EXPECT_EQ(stats.cached_bytes, a_class);
  EXPECT_EQ(stats.reserved_bytes, a_class + b_class);

  allocator.deallocate(b, b_bytes);
  EXPECT_EQ(allocator.stats().cached_bytes, a_class + b_class);

  a = allocator.allocate(a_bytes);
  stats = allocator.stats();
  EXPECT_EQ(stats.hits, 1);
  EXPECT_EQ(stats.misses, 2);
  EXPECT_EQ(stats.cached_bytes, b_class);
  EXPECT_EQ(stats.reserved_bytes, a_class + b_class);
  allocator.deallocate(a, a_bytes);
  EXPECT_EQ(allocator.stats().released_blocks, 0);
}

TEST(CachingAllocator, CacheLimitReleasesTheOldestBlocks) {
  const size_t x = 64 * kKiB, y = 96 * kKiB, z = 128 * kKiB;  // three classes, exact sizes
  ASSERT_EQ(reference_class(x), x);
  ASSERT_EQ(reference_class(y), y);
  ASSERT_EQ(reference_class(z), z);
  CachingAllocator allocator(caching_options(y + z));  // room for y and z, not for all three
  void* bx = allocator.allocate(x);
  void* by = allocator.allocate(y);
  void* bz = allocator.allocate(z);
  allocator.deallocate(bx, x);  // oldest
  allocator.deallocate(by, y);
  allocator.deallocate(bz, z);  // x + y + z > limit: x goes back to the OS
  AllocatorStats stats = allocator.stats();
  EXPECT_EQ(stats.cached_bytes, static_cast<int64_t>(y + z));
  EXPECT_EQ(stats.reserved_bytes, static_cast<int64_t>(y + z));
  EXPECT_EQ(stats.released_blocks, 1);
  EXPECT_LE(stats.cached_bytes, static_cast<int64_t>(allocator.options().cache_limit_bytes));

  void* again_y = allocator.allocate(y);
  void* again_z = allocator.allocate(z);
  void* again_x = allocator.allocate(x);
  stats = allocator.stats();
  EXPECT_EQ(stats.hits, 2);    // y and z were cached
  EXPECT_EQ(stats.misses, 4);  // x, y, z at first, x again
  allocator.deallocate(again_x, x);
  allocator.deallocate(again_y, y);
  allocator.deallocate(again_z, z);
  EXPECT_LE(allocator.stats().cached_bytes, static_cast<int64_t>(y + z));
}

TEST(CachingAllocator, BlockLargerThanTheLimitIsNeverCached) {
  CachingAllocator allocator(caching_options(1 * kMiB));
  const size_t n = 3 * kMiB;
  void* data = allocator.allocate(n);
  allocator.deallocate(data, n);
  AllocatorStats stats = allocator.stats();
  EXPECT_EQ(stats.cached_bytes, 0);
  EXPECT_EQ(stats.reserved_bytes, 0);
  EXPECT_EQ(stats.released_blocks, 1);
  allocator.deallocate(allocator.allocate(n), n);
  EXPECT_EQ(allocator.stats().hits, 0);
  EXPECT_EQ(allocator.stats().misses, 2);

  CachingAllocator caches_nothing(caching_options(0));
  caches_nothing.deallocate(caches_nothing.allocate(64 * kKiB), 64 * kKiB);
  EXPECT_EQ(caches_nothing.stats().cached_bytes, 0);
}

TEST(CachingAllocator, ReleaseCachedMemoryEmptiesTheCache) {
  CachingAllocator allocator(caching_options());
  const std::vector<size_t> sizes = {70 * kKiB, 70 * kKiB, 1 * kMiB, 9 * kMiB};
  std::vector<void*> blocks;
  for (size_t n : sizes) blocks.push_back(allocator.allocate(n));
  const size_t kept = 200 * kKiB;
  void* in_use = allocator.allocate(kept);
  fill_and_check(in_use, kept, 7);
  for (size_t i = 0; i < sizes.size(); ++i) allocator.deallocate(blocks[i], sizes[i]);
  EXPECT_GT(allocator.stats().cached_bytes, 0);

  allocator.release_cached_memory();
  AllocatorStats stats = allocator.stats();
  EXPECT_EQ(stats.cached_bytes, 0);
  EXPECT_EQ(stats.reserved_bytes, static_cast<int64_t>(reference_class(kept)));
  EXPECT_EQ(stats.released_blocks, static_cast<int64_t>(sizes.size()));
  // The block in use is untouched; later requests of the released classes miss.
  const auto* bytes = static_cast<const unsigned char*>(in_use);
  for (size_t i = 0; i < kept; ++i) {
    ASSERT_EQ(bytes[i], static_cast<unsigned char>(7 + i * 131)) << i;
  }
  void* again = allocator.allocate(sizes[0]);
  EXPECT_EQ(allocator.stats().hits, 0);
  allocator.deallocate(again, sizes[0]);
  allocator.deallocate(in_use, kept);
}

TEST(CachingAllocator, DisabledNeverCaches) {
  CachingAllocator allocator(disabled_options());
  const std::vector<size_t> sizes = {100, 70 * kKiB, 1 * kMiB, 3 * kMiB + 1};
  for (int round = 0; round < 3; ++round) {
    for (size_t n : sizes) {
      void* data = allocator.allocate(n);
      fill_and_check(data, n, static_cast<unsigned char>(round));
      allocator.deallocate(data, n);
      EXPECT_EQ(allocator.stats().cached_bytes, 0);
      EXPECT_EQ(allocator.stats().reserved_bytes, 0);
    }
  }
  const AllocatorStats stats = allocator.stats();
  EXPECT_EQ(stats.hits, 0);
  EXPECT_EQ(stats.misses, 3 * 3);  // the three large sizes, three rounds
  allocator.release_cached_memory();
  EXPECT_EQ(allocator.stats().released_blocks, 0);
}

// Threads allocate, fill, hold and free blocks of a few shared classes; every block must keep
// its own thread's pattern until freed (no block handed out twice), and the counters must add up.
TEST(CachingAllocator, ConcurrentAllocateAndFreeFromOpenMPThreads) {
  const std::vector<size_t> sizes = {64 * kKiB, 100 * kKiB, 256 * kKiB + 8, 2 * kMiB + 64, 1000};
  size_t limit = 0;
  for (size_t n : sizes) limit += n >= 64 * kKiB ? reference_class(n) : 0;
  CachingAllocator allocator(caching_options(limit));  // small enough that blocks get evicted
  constexpr int kThreads = 4;
  constexpr int kIterations = 150;
  constexpr int kHeld = 3;
  int failures = 0;
#pragma omp parallel num_threads(kThreads) reduction(+ : failures)
  {
    const uint64_t thread = static_cast<uint64_t>(omp_get_thread_num());
    struct Held {
      uint64_t* data = nullptr;
      size_t nbytes = 0;
      uint64_t tag = 0;
    };
    Held held[kHeld];
    for (int it = 0; it < kIterations; ++it) {
      Held& slot = held[it % kHeld];
      if (slot.data != nullptr) {
        for (size_t w = 0; w < slot.nbytes / 8; ++w) {
          if (slot.data[w] != (slot.tag ^ w)) {
            ++failures;
            break;
          }
        }
        allocator.deallocate(slot.data, slot.nbytes);
      }
      slot.nbytes = sizes[(thread + static_cast<uint64_t>(it)) % sizes.size()];
      slot.data = static_cast<uint64_t*>(allocator.allocate(slot.nbytes));
      slot.tag = (thread << 32) | static_cast<uint64_t>(it);
      for (size_t w = 0; w < slot.nbytes / 8; ++w) slot.data[w] = slot.tag ^ w;
    }
    for (Held& slot : held) {
      for (size_t w = 0; w < slot.nbytes / 8; ++w) {
        if (slot.data[w] != (slot.tag ^ w)) {
          ++failures;
          break;
        }
      }
      allocator.deallocate(slot.data, slot.nbytes);
    }
  }
  EXPECT_EQ(failures, 0);
  int64_t large_requests = 0;
  for (int thread = 0; thread < kThreads; ++thread) {
    for (int it = 0; it < kIterations; ++it) {
      large_requests += sizes[(thread + it) % sizes.size()] >= 64 * kKiB ? 1 : 0;
    }
  }
  const AllocatorStats stats = allocator.stats();
  EXPECT_EQ(stats.hits + stats.misses, large_requests);
  EXPECT_GT(stats.hits, 0);
  EXPECT_LE(stats.cached_bytes, static_cast<int64_t>(limit));
  EXPECT_EQ(stats.reserved_bytes, stats.cached_bytes);  // everything was freed
}

TEST(CachingAllocatorOptions, ReadFromTheEnvironment) {
  std::map<std::string, std::string> env;
  const auto getenv = [&env](const char* name) -> const char* {
    const auto found = env.find(name);
    return found == env.end() ? nullptr : found->second.c_str();
  };
#if defined(__SANITIZE_ADDRESS__)
  const bool default_caching = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  const bool default_caching = false;
#else
  const bool default_caching = true;
#endif
#else
  const bool default_caching = true;
#endif
  CachingAllocatorOptions options = caching_allocator_options_from_env(getenv);
  EXPECT_EQ(options.caching, default_caching);
  EXPECT_EQ(options.cache_limit_bytes, CachingAllocatorOptions{}.cache_limit_bytes);

  env["ROTA_CACHING_ALLOCATOR"] = "0";
  env["ROTA_ALLOCATOR_CACHE_MB"] = "300";
  options = caching_allocator_options_from_env(getenv);
  EXPECT_FALSE(options.caching);
  EXPECT_EQ(options.cache_limit_bytes, 300 * kMiB);

  env["ROTA_CACHING_ALLOCATOR"] = "1";
  env["ROTA_ALLOCATOR_CACHE_MB"] = "0";
  options = caching_allocator_options_from_env(getenv);
  EXPECT_TRUE(options.caching);
  EXPECT_EQ(options.cache_limit_bytes, 0u);

  for (const char* bad : {"yes", "2", " 1"}) {
    env["ROTA_CACHING_ALLOCATOR"] = bad;
    EXPECT_THROW(caching_allocator_options_from_env(getenv), std::invalid_argument) << bad;
  }
  env["ROTA_CACHING_ALLOCATOR"] = "1";
  for (const char* bad : {"-1", "12MB", "1.5", "99999999999999999999"}) {
    env["ROTA_ALLOCATOR_CACHE_MB"] = bad;
    EXPECT_THROW(caching_allocator_options_from_env(getenv), std::invalid_argument) << bad;
  }
}

TEST(CachingAllocatorOptions, ThresholdBelowAPageIsRejected) {
  CachingAllocatorOptions options;
  options.large_threshold_bytes = 1024;
  EXPECT_THROW(CachingAllocator{options}, std::invalid_argument);
}

// Storage's live/peak stats count requested bytes whether or not the block came from the cache.
TEST(StorageAllocator, StorageStatsCountRequestedBytes) {
  const int64_t elements = 50'003;  // bf16: 100,006 bytes, large and not a size class
  const int64_t n = 2 * elements;
  ASSERT_GT(reference_class(n), static_cast<size_t>(n));
  // The process-wide allocator follows the environment: cached only if caching is on and the
  // limit leaves room for the block.
  const CachingAllocatorOptions& options = storage_allocator().options();
  const bool caching = options.caching && options.cache_limit_bytes >= reference_class(n);
  reset_storage_peak();
  const StorageStats before = storage_stats();
  for (int round = 0; round < 2; ++round) {
    const AllocatorStats allocator_before = allocator_stats();
    {
      const Tensor bytes = Tensor::empty({elements}, DType::kBF16);
      EXPECT_EQ(reinterpret_cast<uintptr_t>(bytes.raw_data()) % 64, 0u);
      EXPECT_EQ(storage_stats().live_bytes, before.live_bytes + n);
      const Tensor more = Tensor::empty({10}, DType::kF32);
      EXPECT_EQ(storage_stats().live_bytes, before.live_bytes + n + 40);
    }
    EXPECT_EQ(storage_stats().live_bytes, before.live_bytes);
    EXPECT_EQ(storage_stats().peak_bytes, before.live_bytes + n + 40);
    const AllocatorStats allocator_after = allocator_stats();
    EXPECT_EQ(allocator_after.hits + allocator_after.misses,
              allocator_before.hits + allocator_before.misses + 1);
    if (caching) {
      // The block went back to the cache, and the second round reused it.
      EXPECT_GE(allocator_after.cached_bytes, static_cast<int64_t>(reference_class(n)));
      if (round == 1) {
        EXPECT_EQ(allocator_after.hits, allocator_before.hits + 1);
      }
    } else {
      EXPECT_EQ(allocator_after.cached_bytes, 0);
    }
  }
  release_cached_memory();
  EXPECT_EQ(allocator_stats().cached_bytes, 0);
  EXPECT_EQ(storage_stats().live_bytes, before.live_bytes);
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
