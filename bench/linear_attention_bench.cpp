// Linear attention and LRPE: per-token cost vs sequence length, chunked vs quadratic, fused
// LRPE vs composed, and the LRPE kernels alone. Figures only (Google Benchmark); compare rows
// of one run.
#include <cmath>
#include <vector>

#include <benchmark/benchmark.h>

#include "framework/autograd/ops/linear_attention.h"
#include "framework/autograd/ops/reduce.h"
#include "framework/backend/cpu/parallel.h"
#include "framework/backend/fused/linear_attention.h"
#include "framework/backend/fused/lrpe.h"
#include "framework/nn/position/lrpe.h"
#include "framework/tensor/random.h"

namespace rota {
namespace {

constexpr int64_t kHeads = 4;
constexpr int64_t kHeadDim = 64;
constexpr int64_t kTokensPerBatch = 32768;  // B·N fixed across lengths

// Causal forward + backward through the fused kernel at length N with B = 32768 / N.
// Reports ns per token and peak tensor bytes per token (inputs, outputs, gradients).
void BM_CausalForwardBackwardPerToken(benchmark::State& state) {
  backend::init_runtime();
  const int64_t n = state.range(0);
  const int64_t b = kTokensPerBatch / n;
  Generator gen(1);
  const Tensor q = rand({b, kHeads, n, kHeadDim}, gen, 0, 0.1);
  const Tensor k = rand({b, kHeads, n, kHeadDim}, gen, 0, 0.1);
  const Tensor v = randn({b, kHeads, n, kHeadDim}, gen);
  const Tensor g = randn({b, kHeads, n, kHeadDim}, gen);
  const int64_t baseline = storage_stats().live_bytes;
  reset_storage_peak();
  for (auto _ : state) {
    const Tensor o = backend::causal_linear_attention_forward(q, k, v, 64);
    const auto grads = backend::causal_linear_attention_backward(q, k, v, g, 64);
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
BENCHMARK(BM_CausalForwardBackwardPerToken)
    ->Arg(512)
    ->Arg(2048)
    ->Arg(8192)
    ->Arg(32768)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// Chunked kernel vs the quadratic masked form (forward only), one sequence, 4 heads.
void causal_forward_only(benchmark::State& state, bool chunked) {
  backend::init_runtime();
  const int64_t n = state.range(0);
  Generator gen(2);
  const Tensor q = rand({1, kHeads, n, kHeadDim}, gen, 0, 0.1);
  const Tensor k = rand({1, kHeads, n, kHeadDim}, gen, 0, 0.1);
  const Tensor v = randn({1, kHeads, n, kHeadDim}, gen);
  for (auto _ : state) {
    const Tensor o = chunked ? backend::causal_linear_attention_forward(q, k, v, 64)
                             : backend::causal_linear_attention_quadratic(q, k, v);
    benchmark::DoNotOptimize(o.raw_data());
  }
  state.SetItemsProcessed(state.iterations() * n);
}

void BM_CausalChunked(benchmark::State& state) {
  causal_forward_only(state, true);
}
BENCHMARK(BM_CausalChunked)->Arg(4096)->Arg(8192)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_CausalQuadratic(benchmark::State& state) {
  causal_forward_only(state, false);
}
BENCHMARK(BM_CausalQuadratic)->Arg(4096)->Arg(8192)->Unit(benchmark::kMillisecond)->UseRealTime();

// Fused LRPE (Type 2, learnable Householder) vs the same transform composed from autograd
// primitives; forward + backward on [8, 4, 512, 64].
void lrpe_forward_backward(benchmark::State& state, bool fused) {
  backend::init_runtime();
  Generator gen(3);
  nn::LrpeOptions o;
  o.head_dim = kHeadDim;
  nn::Lrpe module(o, gen);
  const Tensor x = randn({8, kHeads, 512, kHeadDim}, gen);
  for (auto _ : state) {
    Variable xv(x, true);
    const Variable y = fused ? module.forward(xv) : module.forward_composed(xv);
    sum(y).backward();
    benchmark::DoNotOptimize(xv.grad().raw_data());
    module.zero_grad();
  }
  state.SetItemsProcessed(state.iterations() * 8 * 512);
}
void BM_LrpeFused(benchmark::State& state) {
  lrpe_forward_backward(state, true);
}
void BM_LrpeComposed(benchmark::State& state) {
  lrpe_forward_backward(state, false);
}
BENCHMARK(BM_LrpeFused)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_LrpeComposed)->Unit(benchmark::kMillisecond)->UseRealTime();

// The fused LRPE kernels alone, forward and backward separately, in the benchmark model's
// configuration (Type 2, adjacent pairs, Householder P) on f32 [8, 4, 512, 64]. Arguments: the
// position offset (0 for training, > 0 for cached generation), and the input's form, a sum of
// flags: kFusedFeatureMap (φ = 1+elu fused in) and kHeadView (x the head view [B, H, N, D] of a
// [B, N, H·D] projection, read in place). Training takes both: form 3.
constexpr int64_t kFusedFeatureMap = 1;
constexpr int64_t kHeadView = 2;

struct LrpeKernelInputs {
  backend::LrpeKernelConfig config;
  Tensor x, theta, w, grad_y;
};

LrpeKernelInputs lrpe_kernel_inputs(int64_t offset, int64_t form) {
  Generator gen(4);
  LrpeKernelInputs in;
  in.config.offset = offset;
  in.config.input_one_plus_elu = (form & kFusedFeatureMap) != 0;
  in.x = (form & kHeadView) != 0 ? randn({8, 512, kHeads, kHeadDim}, gen).permute({0, 2, 1, 3})
                                 : randn({8, kHeads, 512, kHeadDim}, gen);
  in.grad_y = randn({8, kHeads, 512, kHeadDim}, gen);
  std::vector<double> theta(kHeadDim / 2);
  for (int64_t k = 0; k < kHeadDim / 2; ++k) theta[k] = std::pow(10000.0, -2.0 * k / kHeadDim);
  in.theta = tensor_from(theta, {kHeadDim / 2}, DType::kF32);
  const Tensor v = randn({kHeadDim}, gen, 0, 1, DType::kF64);
  const std::vector<double> vv = v.to_double_vector();
  double norm = 0;
  for (double e : vv) norm += e * e;
  std::vector<double> w(kHeadDim);
  for (int64_t j = 0; j < kHeadDim; ++j) w[j] = vv[j] / std::sqrt(norm);
  in.w = tensor_from(w, {kHeadDim}, DType::kF32);
  return in;
}

void BM_LrpeKernelForward(benchmark::State& state) {
  backend::init_runtime();
  const LrpeKernelInputs in = lrpe_kernel_inputs(state.range(0), state.range(1));
  for (auto _ : state) {
    const Tensor y = backend::lrpe_forward(in.config, in.x, in.theta, in.w, Tensor());
    benchmark::DoNotOptimize(y.raw_data());
  }
  state.SetItemsProcessed(state.iterations() * 8 * 512);
}
BENCHMARK(BM_LrpeKernelForward)
    ->ArgsProduct({{0}, {0, kFusedFeatureMap, kHeadView, kFusedFeatureMap + kHeadView}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_LrpeKernelBackward(benchmark::State& state) {
  backend::init_runtime();
  const LrpeKernelInputs in = lrpe_kernel_inputs(state.range(0), state.range(1));
  for (auto _ : state) {
    const auto grads = backend::lrpe_backward(in.config, in.x, in.theta, in.w, Tensor(), in.grad_y);
    benchmark::DoNotOptimize(grads.dx.raw_data());
    benchmark::DoNotOptimize(grads.dtheta.raw_data());
  }
  state.SetItemsProcessed(state.iterations() * 8 * 512);
}
BENCHMARK(BM_LrpeKernelBackward)
    ->ArgsProduct({{0}, {0, kFusedFeatureMap, kHeadView, kFusedFeatureMap + kHeadView}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace rota

BENCHMARK_MAIN();
