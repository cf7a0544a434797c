// Delta-rule attention (DeltaNet, Gated DeltaNet): forward + backward cost per token vs length.
// Next to the causal linear attention's figures (linear_attention_bench). Figures only (Google
// Benchmark); compare rows of one run.
#include <cmath>
#include <vector>

#include <benchmark/benchmark.h>

#include "framework/backend/cpu/parallel.h"
#include "framework/backend/fused/delta_rule_attention.h"
#include "framework/tensor/random.h"

namespace rota {
namespace {

constexpr int64_t kHeads = 4;
constexpr int64_t kHeadDim = 64;
constexpr int64_t kTokensPerBatch = 32768;  // B·N fixed across lengths

// Rows of x [..., F] scaled to unit L2 norm (the caller's key normalisation).
Tensor l2_normalise_rows(const Tensor& x) {
  std::vector<double> a = x.to_double_vector();
  const int64_t f = x.size(-1);
  for (size_t r = 0; r < a.size(); r += f) {
    double n2 = 0;
    for (int64_t e = 0; e < f; ++e) n2 += a[r + e] * a[r + e];
    for (int64_t e = 0; e < f; ++e) a[r + e] /= std::sqrt(n2);
  }
  return tensor_from(a, x.shape(), x.dtype());
}

// Forward + backward (f32, chunk 64) at length N with B = 32768 / N; range(1) = 1 for Gated
// DeltaNet (log-gates in [−0.5, 0]), 0 for DeltaNet. Reports ns per token and peak tensor bytes
// per token (inputs, outputs, gradients).
void BM_DeltaRuleForwardBackwardPerToken(benchmark::State& state) {
  backend::init_runtime();
  const int64_t n = state.range(0);
  const bool gated = state.range(1) != 0;
  const int64_t b = kTokensPerBatch / n;
  Generator gen(1);
  const Tensor q = randn({b, kHeads, n, kHeadDim}, gen, 0, 0.125);
  const Tensor k = l2_normalise_rows(randn({b, kHeads, n, kHeadDim}, gen));
  const Tensor v = randn({b, kHeads, n, kHeadDim}, gen);
  const Tensor beta = rand({b, kHeads, n}, gen, 0.05, 0.95);
  const Tensor gate = gated ? rand({b, kHeads, n}, gen, -0.5, 0.0) : Tensor();
  const Tensor g = randn({b, kHeads, n, kHeadDim}, gen);
  const int64_t baseline = storage_stats().live_bytes;
  reset_storage_peak();
  for (auto _ : state) {
    const Tensor o = backend::delta_rule_attention_forward(q, k, v, beta, gate, 64);
    const auto grads = backend::delta_rule_attention_backward(q, k, v, beta, gate, g, 64);
    benchmark::DoNotOptimize(o.raw_data());
    benchmark::DoNotOptimize(grads.dq.raw_data());
  }
  const double tokens = static_cast<double>(b * n);
  // Seconds per token (printed with an SI prefix, e.g. 150n = 150 ns).
  state.counters["time_per_token"] = benchmark::Counter(
      tokens, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  state.counters["peak_bytes_per_token"] =
      static_cast<double>(storage_stats().peak_bytes - baseline) / tokens;
  state.SetItemsProcessed(state.iterations() * b * n);
}
BENCHMARK(BM_DeltaRuleForwardBackwardPerToken)
    ->ArgNames({"N", "gated"})
    ->ArgsProduct({{512, 2048, 8192, 32768}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// Forward only, one sequence of 4 heads.
void BM_DeltaRuleForward(benchmark::State& state) {
  backend::init_runtime();
  const int64_t n = state.range(0);
  Generator gen(2);
  const Tensor q = randn({1, kHeads, n, kHeadDim}, gen, 0, 0.125);
  const Tensor k = l2_normalise_rows(randn({1, kHeads, n, kHeadDim}, gen));
  const Tensor v = randn({1, kHeads, n, kHeadDim}, gen);
  const Tensor beta = rand({1, kHeads, n}, gen, 0.05, 0.95);
  const Tensor gate = rand({1, kHeads, n}, gen, -0.5, 0.0);
  for (auto _ : state) {
    const Tensor o = backend::delta_rule_attention_forward(q, k, v, beta, gate, 64);
    benchmark::DoNotOptimize(o.raw_data());
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_DeltaRuleForward)->Arg(8192)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace rota

BENCHMARK_MAIN();
