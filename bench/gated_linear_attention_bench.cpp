// Gated (per-channel, scalar gates) vs plain causal linear attention: fwd + bwd time per token.
// Figures only (Google Benchmark); compare rows of one run.
#include <benchmark/benchmark.h>

#include "framework/backend/cpu/parallel.h"
#include "framework/backend/fused/gated_linear_attention.h"
#include "framework/backend/fused/linear_attention.h"
#include "framework/tensor/random.h"

namespace rota {
namespace {

constexpr int64_t kHeads = 4;
constexpr int64_t kHeadDim = 64;
constexpr int64_t kTokensPerBatch = 32768;  // B·N fixed across lengths

// Gate kinds of the second argument.
enum GateKind : int64_t { kPlain = 0, kPerChannel = 1, kScalar = 2 };

// Causal forward + backward at length N with B = 32768 / N, f32, chunk 64: the plain kernel or
// the gated one with gates in [-1, 0] ([B, H, N, F] or [B, H, N, 1]). Reports time per token.
void BM_ForwardBackwardPerToken(benchmark::State& state) {
  backend::init_runtime();
  const int64_t n = state.range(0);
  const auto kind = static_cast<GateKind>(state.range(1));
  const int64_t b = kTokensPerBatch / n;
  Generator gen(1);
  const Tensor q = rand({b, kHeads, n, kHeadDim}, gen, 0, 0.1);
  const Tensor k = rand({b, kHeads, n, kHeadDim}, gen, 0, 0.1);
  const Tensor v = randn({b, kHeads, n, kHeadDim}, gen);
  const Tensor g = randn({b, kHeads, n, kHeadDim}, gen);
  const Tensor gate = rand({b, kHeads, n, kind == kScalar ? 1 : kHeadDim}, gen, -1.0, 0.0);
  for (auto _ : state) {
    if (kind == kPlain) {
      const Tensor o = backend::causal_linear_attention_forward(q, k, v, 64);
      const auto grads = backend::causal_linear_attention_backward(q, k, v, g, 64);
      benchmark::DoNotOptimize(o.raw_data());
      benchmark::DoNotOptimize(grads.dq.raw_data());
    } else {
      const Tensor o = backend::gated_linear_attention_forward(q, k, v, gate, 64);
      const auto grads = backend::gated_linear_attention_backward(q, k, v, gate, g, 64);
      benchmark::DoNotOptimize(o.raw_data());
      benchmark::DoNotOptimize(grads.dlog_gate.raw_data());
    }
  }
  const double tokens = static_cast<double>(b * n);
  // Seconds per token (printed with an SI prefix, e.g. 150n = 150 ns).
  state.counters["time_per_token"] = benchmark::Counter(
      tokens, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  state.SetItemsProcessed(state.iterations() * b * n);
}
BENCHMARK(BM_ForwardBackwardPerToken)
    ->ArgNames({"N", "gate"})
    ->ArgsProduct({{512, 2048, 8192, 32768}, {kPlain, kPerChannel, kScalar}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace rota

BENCHMARK_MAIN();
