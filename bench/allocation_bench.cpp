// Allocate + first touch of training-sized buffers with the caching allocator on and off.

// After one untimed warm-up, each iteration allocates, writes every byte from all OpenMP threads
// (as a kernel writes its fresh output), and frees. Caching off is the aligned_alloc path Storage
// used before the cache: glibc maps large blocks fresh, so every touch page-faults.
// bytes_per_second = bytes written.
//   allocate_touch/caching:{0,1}/MB:n   one buffer of n MiB per iteration
//   step_like/caching:{0,1}             a step's worth of mixed sizes (below), all held, then freed
//   tensor_empty_touch/MB:n             Tensor::empty through Storage (mode from the environment:
//                                       run once with ROTA_CACHING_ALLOCATOR=0 to compare)
// Run with OMP_NUM_THREADS=2.
#include <cstring>
#include <vector>

#include <benchmark/benchmark.h>

#include "framework/backend/cpu/parallel.h"
#include "framework/tensor/caching_allocator.h"
#include "framework/tensor/tensor.h"

namespace rota {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

// One allocator per mode for the whole run, so caching:1 keeps its blocks across iterations.
CachingAllocator& allocator_for(bool caching) {
  const auto make = [](bool with_cache) {
    CachingAllocatorOptions options;
    options.caching = with_cache;
    options.cache_limit_bytes = size_t{4096} << 20;
    return new CachingAllocator(options);
  };
  static CachingAllocator* const cached = make(true);
  static CachingAllocator* const uncached = make(false);
  return caching ? *cached : *uncached;
}

// Writes every byte with the kernels' static OpenMP split.
void first_touch(void* data, int64_t bytes) {
  char* out = static_cast<char*>(data);
  backend::parallel_for(bytes, 1, [&](int64_t begin, int64_t end) {
    std::memset(out + begin, 1, static_cast<size_t>(end - begin));
  });
}

void BM_allocate_touch(benchmark::State& state) {
  const bool caching = state.range(0) != 0;
  const int64_t bytes = state.range(1) * kMiB;
  CachingAllocator& allocator = allocator_for(caching);
  const auto allocate_touch_free = [&] {
    void* data = allocator.allocate(static_cast<size_t>(bytes));
    first_touch(data, bytes);
    benchmark::DoNotOptimize(data);
    allocator.deallocate(data, static_cast<size_t>(bytes));
  };
  allocate_touch_free();  // untimed warm-up: steady state, as from the second training step on
  for (auto _ : state) allocate_touch_free();
  state.SetBytesProcessed(state.iterations() * bytes);
}

// Sizes of one training step's activations and gradients, in MiB (B*T = 2,048 tokens, d = 512,
// 4d MLP, 8,192-word vocabulary): logits and their gradient, MLP hidden states, d-wide tensors.
const std::vector<int64_t> kStepSizesMiB = {64, 64, 16, 16, 16, 4, 4, 4, 4, 4, 4, 4, 4, 1, 1};

void BM_step_like(benchmark::State& state) {
  const bool caching = state.range(0) != 0;
  CachingAllocator& allocator = allocator_for(caching);
  int64_t step_bytes = 0;
  for (int64_t mib : kStepSizesMiB) step_bytes += mib * kMiB;
  std::vector<void*> held(kStepSizesMiB.size());
  const auto step = [&] {
    for (size_t i = 0; i < kStepSizesMiB.size(); ++i) {
      held[i] = allocator.allocate(static_cast<size_t>(kStepSizesMiB[i] * kMiB));
      first_touch(held[i], kStepSizesMiB[i] * kMiB);
    }
    for (size_t i = held.size(); i-- > 0;) {
      allocator.deallocate(held[i], static_cast<size_t>(kStepSizesMiB[i] * kMiB));
    }
  };
  step();  // untimed warm-up step
  for (auto _ : state) step();
  state.SetBytesProcessed(state.iterations() * step_bytes);
}

void BM_tensor_empty_touch(benchmark::State& state) {
  const int64_t bytes = state.range(0) * kMiB;
  const auto empty_touch = [&] {
    Tensor t = Tensor::empty({bytes / 4}, DType::kF32);
    first_touch(t.raw_data(), bytes);
    benchmark::DoNotOptimize(t.raw_data());
  };
  empty_touch();  // untimed warm-up
  for (auto _ : state) empty_touch();
  state.SetBytesProcessed(state.iterations() * bytes);
  state.SetLabel(storage_allocator().options().caching ? "caching on" : "caching off");
}

BENCHMARK(BM_allocate_touch)
    ->ArgNames({"caching", "MB"})
    ->ArgsProduct({{0, 1}, {1, 4, 16, 64}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_step_like)
    ->ArgName("caching")
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_tensor_empty_touch)
    ->ArgName("MB")
    ->Arg(4)
    ->Arg(64)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace rota

int main(int argc, char** argv) {
  rota::backend::init_runtime();  // FTZ/DAZ on every thread, as in training
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
