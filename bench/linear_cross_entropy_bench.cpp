// LM-head loss, forward + backward: composed (matmul + cross_entropy) vs the fused tiled op,
// f32 and bf16, with peak tensor bytes; and the fused kernel's time per tile size.
#include <cstdint>
#include <string>

#include <benchmark/benchmark.h>

#include "framework/autograd/ops/linear_cross_entropy.h"
#include "framework/autograd/ops/loss.h"
#include "framework/autograd/ops/matmul.h"
#include "framework/autograd/precision.h"
#include "framework/backend/cpu/parallel.h"
#include "framework/backend/fused/linear_cross_entropy.h"
#include "framework/backend/primitives/matmul.h"
#include "framework/tensor/random.h"
#include "framework/tensor/storage.h"

// The benchmark model's LM head: 4096 rows (batch × sequence), E = 256, V = 8192, tied
// weight, no bias. Args: {bf16 (0/1), masked (0/1)}; masked scores 15% of the rows, as a
// masked-LM batch does (the rest are ignore_index). Run with OMP_NUM_THREADS set; times are
// wall-clock.
namespace rota {
namespace {

constexpr int64_t kRows = 4096;
constexpr int64_t kEmbed = 256;
constexpr int64_t kVocab = 8192;

struct Problem {
  Variable hidden;  // [R, E], requires grad
  Variable weight;  // [V, E], requires grad
  Tensor targets;   // [R] i64
};

Problem make_problem(bool masked = false, int64_t vocab = kVocab) {
  backend::init_runtime();
  Generator gen(1);
  Problem p{Variable(randn({kRows, kEmbed}, gen), true),
            Variable(randn({vocab, kEmbed}, gen, 0.0, 0.05), true),
            randint({kRows}, gen, 0, vocab, DType::kI64)};
  if (masked) {
    for (int64_t r = 0; r < kRows; ++r) {
      if (r % 20 >= 3) p.targets.set({r}, -100);
    }
  }
  return p;
}

using LossFn = Variable (*)(const Problem&);

Variable composed_loss(const Problem& p) {
  return cross_entropy(matmul(p.hidden, p.weight, false, true), p.targets);
}

Variable fused_loss(const Problem& p) {
  return linear_cross_entropy(p.hidden, p.weight, Variable(), p.targets);
}

// One training step of the head per iteration: loss, backward, gradients dropped. Reports
// ns per row and the peak tensor bytes above what the inputs hold.
void run_step(benchmark::State& state, LossFn loss_fn) {
  Problem p = make_problem(state.range(1) != 0);
  const MatmulPrecisionGuard precision(state.range(0) != 0 ? MatmulPrecision::kBF16
                                                           : MatmulPrecision::kF32);
  loss_fn(p).backward();  // primitives created and cached outside the timed loop
  p.hidden.zero_grad();
  p.weight.zero_grad();
  const int64_t baseline = storage_stats().live_bytes;
  reset_storage_peak();
  for (auto _ : state) {
    const Variable loss = loss_fn(p);
    loss.backward();
    benchmark::DoNotOptimize(p.weight.grad().raw_data());
    p.hidden.zero_grad();
    p.weight.zero_grad();
  }
  state.counters["peak_MB"] = static_cast<double>(storage_stats().peak_bytes - baseline) / 1e6;
  state.counters["time_per_row"] =
      benchmark::Counter(static_cast<double>(kRows), benchmark::Counter::kIsIterationInvariantRate |
                                                         benchmark::Counter::kInvert);
  state.SetLabel(std::string(state.range(0) != 0 ? "bf16" : "f32") +
                 (state.range(1) != 0 ? " masked" : ""));
}

void BM_ComposedForwardBackward(benchmark::State& state) {
  run_step(state, composed_loss);
}
void BM_FusedForwardBackward(benchmark::State& state) {
  run_step(state, fused_loss);
}
BENCHMARK(BM_ComposedForwardBackward)
    ->Args({0, 0})
    ->Args({1, 0})
    ->Args({0, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_FusedForwardBackward)
    ->Args({0, 0})
    ->Args({1, 0})
    ->Args({0, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// Loss only (evaluation, no gradients): composed vs fused, f32.
void BM_ComposedLossOnly(benchmark::State& state) {
  Problem p = make_problem();
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        backend::cross_entropy_forward(
            backend::matmul(p.hidden.data(), p.weight.data(), false, true), p.targets, {})
            .loss.raw_data());
  }
}
void BM_FusedLossOnly(benchmark::State& state) {
  Problem p = make_problem();
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        backend::linear_cross_entropy(p.hidden.data(), p.weight.data(), Tensor(), p.targets, {})
            .loss.raw_data());
  }
}
BENCHMARK(BM_ComposedLossOnly)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_FusedLossOnly)->Unit(benchmark::kMillisecond)->UseRealTime();

// The fused kernel with every gradient, by tile size. Args: {tile rows, bf16 (0/1), vocabulary};
// bf16 passes pre-rounded bf16 operands, as the op does. 33,278 is WikiText-2's word vocabulary
// (the bigger bench recipes and issue 23's recipe).
void BM_FusedKernelTileRows(benchmark::State& state) {
  Problem p = make_problem(false, state.range(2));
  const bool bf16 = state.range(1) != 0;
  const Tensor hidden = bf16 ? p.hidden.data().to(DType::kBF16) : p.hidden.data();
  const Tensor weight = bf16 ? p.weight.data().to(DType::kBF16) : p.weight.data();
  backend::LinearCrossEntropyOptions options;
  options.grad_hidden = options.grad_weight = true;
  options.tile_rows = state.range(0);
  const int64_t baseline = storage_stats().live_bytes;
  reset_storage_peak();
  for (auto _ : state) {
    const backend::LinearCrossEntropyResult r =
        backend::linear_cross_entropy(hidden, weight, Tensor(), p.targets, options);
    benchmark::DoNotOptimize(r.grad_weight.raw_data());
  }
  state.counters["peak_MB"] = static_cast<double>(storage_stats().peak_bytes - baseline) / 1e6;
  state.SetLabel(bf16 ? "bf16" : "f32");
}
BENCHMARK(BM_FusedKernelTileRows)
    ->ArgsProduct({{64, 128, 256, 512, 1024}, {0, 1}, {kVocab, 33278}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace rota

BENCHMARK_MAIN();
