// The chunked attention kernels' block products: small_gemm's f32 micro-kernels against the bf16
// products of each unit (emulated, AVX512-BF16, AMX) and against one oneDNN batched call, one
// thread, in GFLOP/s.
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "framework/backend/cpu/bf16_gemm.h"
#include "framework/backend/primitives/matmul.h"
#include "framework/tensor/random.h"

// Args: {M, N, K, A transposed}. A transposed is read in place (A stored [K, M]), as the
// kernels read Kᵀ and Qᵀ. Unit -1: the f32 product; otherwise a Bf16Unit.
namespace {

namespace sg = rota::backend::small_gemm;

void BM_BlockProduct(benchmark::State& state, int unit) {
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  const bool transposed = state.range(3) != 0;
  if (unit >= 0 && !sg::bf16_unit_supported(static_cast<sg::Bf16Unit>(unit))) {
    state.SkipWithError("this CPU lacks the unit");
    return;
  }
  rota::Generator gen(1);
  std::vector<float> a(m * k), b(k * n), c(m * n);
  for (float& x : a) x = static_cast<float>(gen.next_normal());
  for (float& x : b) x = static_cast<float>(gen.next_normal());
  const sg::GemmArgs<float> args{
      m, n, k, a.data(), transposed ? 1 : k, transposed ? m : 1, b.data(), n, c.data(), n, false};
  for (auto _ : state) {
    if (unit < 0) {
      sg::gemm(args);
    } else {
      sg::gemm_bf16(args, static_cast<sg::Bf16Unit>(unit));
    }
    benchmark::DoNotOptimize(c.data());
  }
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * static_cast<double>(m * n * k) * 1e-9,
                                                 benchmark::Counter::kIsIterationInvariantRate);
}

void shapes(benchmark::internal::Benchmark* b) {
  for (bool transposed : {false, true}) {
    b->Args({64, 64, 64, transposed});
    b->Args({32, 64, 64, transposed});
    b->Args({64, 64, 512, transposed});
  }
}

// The same products as one oneDNN batched call over `batch` blocks ([batch, M, K]·[batch, K, N]),
// for comparison with the per-block micro-kernels. Args: {M, N, K}. oneDNN uses the OpenMP
// threads: run with OMP_NUM_THREADS=1 to compare with the one-thread micro-kernels.
void BM_BatchedOnednn(benchmark::State& state) {
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2), batch = 256;
  rota::Generator gen(1);
  const rota::Tensor a = rota::randn({batch, m, k}, gen);
  const rota::Tensor b = rota::randn({batch, k, n}, gen);
  for (auto _ : state) benchmark::DoNotOptimize(rota::backend::matmul(a, b).data<float>());
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * static_cast<double>(batch * m * n * k) * 1e-9,
                         benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_BatchedOnednn)->Args({64, 64, 64})->Args({32, 64, 64});

BENCHMARK_CAPTURE(BM_BlockProduct, f32, -1)->Apply(shapes);
BENCHMARK_CAPTURE(BM_BlockProduct, bf16_emulated, 0)->Apply(shapes);
BENCHMARK_CAPTURE(BM_BlockProduct, bf16_avx512_bf16, 1)->Apply(shapes);
BENCHMARK_CAPTURE(BM_BlockProduct, bf16_amx, 2)->Apply(shapes);

}  // namespace

BENCHMARK_MAIN();
