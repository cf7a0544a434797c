// Memory-bound kernels (add, gelu, layer norm) in bytes moved per second against memcpy.

// Every benchmark reports bytes_per_second = (bytes read + bytes written) / wall time, so a
// kernel can be compared with a memcpy that moves the same bytes (a copy of N bytes moves 2N).
// Run with OMP_NUM_THREADS=2; the parallel memcpy is the fair baseline for OpenMP kernels.
//   add:        a, b, out: 16M f32        -> 3 x 64 MB moved,  baseline: copy of 96 MB
//   gelu (erf): x, y: 16M f32             -> 2 x 64 MB moved,  baseline: copy of 64 MB
//   layer norm: x, y: [8192, 1024] f32    -> 2 x 32 MB moved,  baseline: copy of 32 MB
// Also reported for reference: neg and gelu_tanh (same bytes as gelu), the layer-norm backward
// (reads g and x, writes dx) and cross-entropy forward/backward on [4096, 8192] f32 logits.
// The kernels return fresh tensors, so each call also pays for allocating (and page-faulting)
// its output; the *_fresh_dst memcpy variants pay the same, which separates allocator cost from
// kernel cost.
#include <cstring>

#include <benchmark/benchmark.h>

#include "framework/backend/cross_entropy.h"
#include "framework/backend/elementwise.h"
#include "framework/backend/norm.h"
#include "framework/backend/parallel.h"
#include "framework/tensor/random.h"

namespace rota {
namespace {

constexpr int64_t kElements = int64_t{16} << 20;  // 16M floats = 64 MB
constexpr int64_t kRows = 8192;
constexpr int64_t kDim = 1024;
constexpr int64_t kMB = int64_t{1} << 20;

void set_bytes_moved(benchmark::State& state, int64_t bytes_per_iteration) {
  state.SetBytesProcessed(state.iterations() * bytes_per_iteration);
}

// Copy with the same static OpenMP split as the kernels.
void parallel_copy(char* dst, const char* src, int64_t bytes) {
  backend::parallel_for(bytes, 1, [&](int64_t begin, int64_t end) {
    std::memcpy(dst + begin, src + begin, static_cast<size_t>(end - begin));
  });
}

// Copy of state.range(0) MB between preallocated, already-touched buffers.
void BM_memcpy_serial(benchmark::State& state) {
  const int64_t bytes = state.range(0) * kMB;
  const Tensor src = zeros({bytes / 4}, DType::kI32);  // zeros() touches the pages
  Tensor dst = zeros({bytes / 4}, DType::kI32);
  for (auto _ : state) {
    std::memcpy(dst.raw_data(), src.raw_data(), static_cast<size_t>(bytes));
    benchmark::ClobberMemory();
  }
  set_bytes_moved(state, 2 * bytes);
}

void BM_memcpy_parallel(benchmark::State& state) {
  const int64_t bytes = state.range(0) * kMB;
  const Tensor src = zeros({bytes / 4}, DType::kI32);
  Tensor dst = zeros({bytes / 4}, DType::kI32);
  for (auto _ : state) {
    parallel_copy(static_cast<char*>(dst.raw_data()), static_cast<const char*>(src.raw_data()),
                  bytes);
    benchmark::ClobberMemory();
  }
  set_bytes_moved(state, 2 * bytes);
}

// Same, but into a freshly allocated destination each time, as the kernels do.
void BM_memcpy_parallel_fresh_dst(benchmark::State& state) {
  const int64_t bytes = state.range(0) * kMB;
  const Tensor src = zeros({bytes / 4}, DType::kI32);
  for (auto _ : state) {
    Tensor dst = Tensor::empty({bytes / 4}, DType::kI32);
    parallel_copy(static_cast<char*>(dst.raw_data()), static_cast<const char*>(src.raw_data()),
                  bytes);
    benchmark::DoNotOptimize(dst.raw_data());
  }
  set_bytes_moved(state, 2 * bytes);
}

void BM_add(benchmark::State& state) {
  Generator gen(1);
  const Tensor a = rand({kElements}, gen);
  const Tensor b = rand({kElements}, gen);
  for (auto _ : state) {
    Tensor out = backend::add(a, b);
    benchmark::DoNotOptimize(out.raw_data());
  }
  set_bytes_moved(state, 3 * kElements * 4);
}

void BM_unary(benchmark::State& state, backend::UnaryOp op) {
  Generator gen(2);
  const Tensor x = rand({kElements}, gen, -3.0, 3.0);
  for (auto _ : state) {
    Tensor y = backend::unary(op, x);
    benchmark::DoNotOptimize(y.raw_data());
  }
  set_bytes_moved(state, 2 * kElements * 4);
}

void BM_layer_norm_forward(benchmark::State& state) {
  Generator gen(3);
  const Tensor x = randn({kRows, kDim}, gen);
  const Tensor w = randn({kDim}, gen, 1.0, 0.1);
  const Tensor b = randn({kDim}, gen, 0.0, 0.1);
  for (auto _ : state) {
    backend::LayerNormForward out = backend::layer_norm_forward(x, w, b, 1e-5);
    benchmark::DoNotOptimize(out.y.raw_data());
  }
  set_bytes_moved(state, 2 * kRows * kDim * 4 + 2 * kRows * 4);
}

void BM_layer_norm_backward(benchmark::State& state) {
  Generator gen(4);
  const Tensor x = randn({kRows, kDim}, gen);
  const Tensor w = randn({kDim}, gen, 1.0, 0.1);
  const Tensor g = randn({kRows, kDim}, gen);
  const backend::LayerNormForward fwd = backend::layer_norm_forward(x, w, Tensor(), 1e-5);
  for (auto _ : state) {
    backend::LayerNormGrads grads = backend::layer_norm_backward(g, x, fwd.mean, fwd.rstd, w, {});
    benchmark::DoNotOptimize(grads.dx.raw_data());
  }
  set_bytes_moved(state, 3 * kRows * kDim * 4);  // read g and x, write dx
}

// Cross-entropy over a language-model head: [4096 tokens, 8192 classes] f32 (128 MB of logits).
// Bound by one exp per logit in each direction rather than by bandwidth.
constexpr int64_t kTokens = 4096;
constexpr int64_t kClasses = 8192;

void BM_cross_entropy_forward(benchmark::State& state) {
  Generator gen(5);
  const Tensor logits = randn({kTokens, kClasses}, gen);
  const Tensor targets = randint({kTokens}, gen, 0, kClasses);
  for (auto _ : state) {
    backend::CrossEntropyForward out = backend::cross_entropy_forward(logits, targets, {});
    benchmark::DoNotOptimize(out.loss.raw_data());
  }
  set_bytes_moved(state, kTokens * kClasses * 4);
}

void BM_cross_entropy_backward(benchmark::State& state) {
  Generator gen(6);
  const Tensor logits = randn({kTokens, kClasses}, gen);
  const Tensor targets = randint({kTokens}, gen, 0, kClasses);
  const backend::CrossEntropyForward fwd = backend::cross_entropy_forward(logits, targets, {});
  const Tensor grad = scalar_tensor(1.0);
  for (auto _ : state) {
    Tensor dlogits =
        backend::cross_entropy_backward(grad, logits, targets, fwd.logsumexp, fwd.valid_rows, {});
    benchmark::DoNotOptimize(dlogits.raw_data());
  }
  set_bytes_moved(state, 2 * kTokens * kClasses * 4);
}

}  // namespace
}  // namespace rota

using namespace rota;

BENCHMARK(BM_memcpy_serial)
    ->Arg(96)
    ->Arg(64)
    ->Arg(32)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_memcpy_parallel)
    ->Arg(96)
    ->Arg(64)
    ->Arg(32)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_memcpy_parallel_fresh_dst)
    ->Arg(96)
    ->Arg(64)
    ->Arg(32)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_add)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_unary, gelu_erf, backend::UnaryOp::kGeluErf)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_unary, gelu_tanh, backend::UnaryOp::kGeluTanh)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_unary, neg, backend::UnaryOp::kNeg)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_layer_norm_forward)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_layer_norm_backward)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_cross_entropy_forward)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_cross_entropy_backward)->Unit(benchmark::kMillisecond)->UseRealTime();

int main(int argc, char** argv) {
  backend::init_runtime();  // FTZ/DAZ on every thread, as in training
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
