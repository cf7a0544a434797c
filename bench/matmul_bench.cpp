// Rota's backend::matmul against the same oneDNN f32 primitive called directly, in GFLOP/s.
#include <chrono>
#include <cstdint>
#include <unordered_map>

#include <benchmark/benchmark.h>
#include <oneapi/dnnl/dnnl.hpp>

#include "framework/backend/cpu/parallel.h"
#include "framework/backend/primitives/matmul.h"
#include "framework/tensor/random.h"

// Both sides run the identical oneDNN primitive; the difference is Rota's per-call overhead
// (operand checks, cache lookup, memory-object wrapping, allocating the output). Args are
// {M, K, N, transpose_b}; with transpose_b, B is stored [N, K] and read as a transposed view
// (the linear-layer layout). Run with OMP_NUM_THREADS set; times are wall-clock.
namespace {

using rota::DType;
using rota::Tensor;

struct Problem {
  int64_t m, k, n;
  bool transpose_b;
  Tensor a;  // [M, K]
  Tensor b;  // [K, N], or [N, K] when transpose_b
};

Problem make_problem(const benchmark::State& state) {
  rota::backend::init_runtime();
  Problem p{state.range(0), state.range(1), state.range(2), state.range(3) != 0, {}, {}};
  rota::Generator gen(1);
  p.a = rota::rand({p.m, p.k}, gen, -1, 1);
  p.b = p.transpose_b ? rota::rand({p.n, p.k}, gen, -1, 1) : rota::rand({p.k, p.n}, gen, -1, 1);
  return p;
}

void report_gflops(benchmark::State& state, const Problem& p) {
  // 2·M·K·N flops per product (a multiply and an add per term).
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * static_cast<double>(p.m * p.k * p.n) * 1e-9,
                                                 benchmark::Counter::kIsIterationInvariantRate);
}

void BM_RotaMatmul(benchmark::State& state) {
  const Problem p = make_problem(state);
  rota::backend::matmul(p.a, p.b, false, p.transpose_b);  // creates and caches the primitive
  for (auto _ : state) {
    Tensor c = rota::backend::matmul(p.a, p.b, false, p.transpose_b);
    benchmark::DoNotOptimize(c.raw_data());
  }
  report_gflops(state, p);
}

// The oneDNN f32 matmul for p, called directly: primitive, memory objects and stream are
// created once, outside any timed loop.
class DirectMatmul {
 public:
  explicit DirectMatmul(const Problem& p)
      : engine_(dnnl::engine::kind::cpu, 0),
        stream_(engine_),
        c_(Tensor::empty({p.m, p.n}, DType::kF32)) {
    using dnnl::memory;
    const memory::desc a_md({p.m, p.k}, memory::data_type::f32, memory::dims{p.k, 1});
    const memory::desc b_md({p.k, p.n}, memory::data_type::f32,
                            p.transpose_b ? memory::dims{1, p.k} : memory::dims{p.n, 1});
    const memory::desc c_md({p.m, p.n}, memory::data_type::f32, memory::dims{p.n, 1});
    primitive_ =
        dnnl::matmul(dnnl::matmul::primitive_desc(dnnl::matmul::desc(a_md, b_md, c_md), engine_));
    args_ = {{DNNL_ARG_SRC, memory(a_md, engine_, p.a.raw_data())},
             {DNNL_ARG_WEIGHTS, memory(b_md, engine_, p.b.raw_data())},
             {DNNL_ARG_DST, memory(c_md, engine_, c_.raw_data())}};
  }

  void run() {
    primitive_.execute(stream_, args_);
    stream_.wait();
    benchmark::DoNotOptimize(c_.raw_data());
  }

 private:
  dnnl::engine engine_;
  dnnl::stream stream_;
  Tensor c_;
  dnnl::matmul primitive_;
  std::unordered_map<int, dnnl::memory> args_;
};

void BM_OnednnDirect(benchmark::State& state) {
  const Problem p = make_problem(state);
  DirectMatmul direct(p);
  for (auto _ : state) direct.run();
  report_gflops(state, p);
}

// Both in one loop, alternating which goes first: on a shared, noisy machine the ratio of the
// two accumulated times is far steadier than the ratio of two separate runs.
void BM_RotaVsDirectPaired(benchmark::State& state) {
  using Clock = std::chrono::steady_clock;
  const Problem p = make_problem(state);
  DirectMatmul direct(p);
  const auto rota = [&] {
    Tensor c = rota::backend::matmul(p.a, p.b, false, p.transpose_b);
    benchmark::DoNotOptimize(c.raw_data());
  };
  rota();  // creates and caches Rota's primitive
  direct.run();
  double rota_seconds = 0;
  double direct_seconds = 0;
  bool rota_first = true;
  for (auto _ : state) {
    const Clock::time_point t0 = Clock::now();
    rota_first ? rota() : direct.run();
    const Clock::time_point t1 = Clock::now();
    rota_first ? direct.run() : rota();
    const Clock::time_point t2 = Clock::now();
    const double first = std::chrono::duration<double>(t1 - t0).count();
    const double second = std::chrono::duration<double>(t2 - t1).count();
    rota_seconds += rota_first ? first : second;
    direct_seconds += rota_first ? second : first;
    rota_first = !rota_first;
  }
  const double gflop =
      2.0 * static_cast<double>(p.m * p.k * p.n) * 1e-9 * static_cast<double>(state.iterations());
  state.counters["Rota_GFLOP/s"] = gflop / rota_seconds;
  state.counters["oneDNN_GFLOP/s"] = gflop / direct_seconds;
  state.counters["Rota/oneDNN"] = direct_seconds / rota_seconds;
}

void settings(benchmark::internal::Benchmark* b) {
  b->ArgNames({"M", "K", "N", "tB"})->Unit(benchmark::kMillisecond)->UseRealTime();
}

// Registered pairwise, so each shape's Rota and direct runs follow each other and see the same
// machine state (frequency, caches).
BENCHMARK(BM_RotaMatmul)->Apply(settings)->Args({1024, 1024, 1024, 0});
BENCHMARK(BM_OnednnDirect)->Apply(settings)->Args({1024, 1024, 1024, 0});
BENCHMARK(BM_RotaMatmul)->Apply(settings)->Args({4096, 1024, 256, 0});
BENCHMARK(BM_OnednnDirect)->Apply(settings)->Args({4096, 1024, 256, 0});
BENCHMARK(BM_RotaMatmul)->Apply(settings)->Args({4096, 1024, 256, 1});
BENCHMARK(BM_OnednnDirect)->Apply(settings)->Args({4096, 1024, 256, 1});
BENCHMARK(BM_RotaVsDirectPaired)->Apply(settings)->Args({1024, 1024, 1024, 0});
BENCHMARK(BM_RotaVsDirectPaired)->Apply(settings)->Args({4096, 1024, 256, 0});
BENCHMARK(BM_RotaVsDirectPaired)->Apply(settings)->Args({4096, 1024, 256, 1});
// A small product, where Rota's fixed per-call overhead shows most.
BENCHMARK(BM_RotaVsDirectPaired)
    ->Apply(settings)
    ->Args({64, 64, 64, 0})
    ->Unit(benchmark::kMicrosecond);

}  // namespace

// bf16 weight-gradient products dW = gᵀ·x (g: [R, Out], x: [R, In], R the long dim), with g
// read as a transposed view (what linear's backward does) or stored transposed ([Out, R]).
// Args {Out, R, In, g_transposed_view}.
void BM_Bf16WeightGradient(benchmark::State& state) {
  rota::backend::init_runtime();
  const int64_t out = state.range(0), rows = state.range(1), in = state.range(2);
  const bool view = state.range(3) != 0;
  rota::Generator gen(2);
  const Tensor g = rota::rand({rows, out}, gen, -1, 1).to(DType::kBF16);
  const Tensor g_t = g.transpose(0, 1).contiguous();  // [Out, R]
  const Tensor x = rota::rand({rows, in}, gen, -1, 1).to(DType::kBF16);
  for (auto _ : state) {
    Tensor c = view ? rota::backend::matmul(g, x, true, false) : rota::backend::matmul(g_t, x);
    benchmark::DoNotOptimize(c.raw_data());
  }
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * static_cast<double>(out * rows * in) * 1e-9,
                                                 benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_Bf16WeightGradient)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond)
    ->Args({768, 4096, 256, 1})
    ->Args({768, 4096, 256, 0})
    ->Args({1024, 4096, 256, 1})
    ->Args({1024, 4096, 256, 0})
    ->Args({256, 4096, 1024, 1})
    ->Args({256, 4096, 1024, 0})
    ->Args({8192, 256, 256, 1})
    ->Args({8192, 256, 256, 0});

BENCHMARK_MAIN();
