// Memory-bound kernels (add, gelu, layer norm) in bytes moved per second against memcpy.

// Every benchmark reports bytes_per_second = (bytes read + bytes written) / wall time, so a
// kernel can be compared with a memcpy that moves the same bytes (a copy of N bytes moves 2N).
// Run with OMP_NUM_THREADS=2; the parallel memcpy is the fair baseline for OpenMP kernels.
//   add:        a, b, out: 16M f32        -> 3 x 64 MB moved,  baseline: copy of 96 MB
//   gelu (erf): x, y: 16M f32             -> 2 x 64 MB moved,  baseline: copy of 64 MB
//   layer norm: x, y: [8192, 1024] f32    -> 2 x 32 MB moved,  baseline: copy of 32 MB
// Also reported for reference: neg, gelu_tanh, exp, tanh, sigmoid, silu, elu and one_plus_elu
// (same bytes as gelu; items/s = elements per second), the backward of gelu, gelu_tanh and silu
// (read x, y, grad_y, write grad_x), the layer-norm backward (reads g and x, writes dx) and
// cross-entropy forward/backward on [4096, 8192] f32 logits, and the vecmath kernels alone on an
// L1-resident array per instruction-set build next to the scalar libm loops they replaced. The
// kernels return fresh tensors, so each call also pays for allocating (and page-faulting) its
// output; the *_fresh_dst memcpy variants pay the same, which separates allocator cost from kernel
// cost.
//   gated (SwiGLU): gu [8192, 2·1024] f32 -> y [8192, 1024]: the fused pass (gated_activation)
//   against the composed one (silu of the gate view, then the product with the up view); the
//   backward reads gu and dy and writes dgu (fused) against the composed unary_backward, two
//   products and a concat.
#include <cmath>
#include <cstring>
#include <string>

#include <benchmark/benchmark.h>

#include "framework/backend/cpu/parallel.h"
#include "framework/backend/cpu/vector_math.h"
#include "framework/backend/fused/fused_activation.h"
#include "framework/backend/fused/gated_activation.h"
#include "framework/backend/primitives/convert.h"
#include "framework/backend/primitives/cross_entropy.h"
#include "framework/backend/primitives/elementwise.h"
#include "framework/backend/primitives/indexing.h"
#include "framework/backend/primitives/norm.h"
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

// The operand of a bf16 product on the portable path (no bf16 matmul in oneDNN): rounded to bf16
// and widened back to f32 (two passes, the old way) against round_to_bf16_values (one pass).
void BM_portable_bf16_operand(benchmark::State& state) {
  Generator gen(1);
  const Tensor x = randn({kElements}, gen);
  const bool one_pass = state.range(0) != 0;
  for (auto _ : state) {
    Tensor out = one_pass ? backend::round_to_bf16_values(x) : backend::to_bf16(x).to(DType::kF32);
    benchmark::DoNotOptimize(out.raw_data());
  }
  set_bytes_moved(state, 2 * kElements * 4);
}

// GELU for a bf16 product on the portable path: the f32 activation, rounded to bf16 and widened
// back (three passes, the old way) against the activation rounded in the same pass
// (activation_to_bf16, kToBf16Values).
void BM_portable_bf16_activation(benchmark::State& state) {
  Generator gen(1);
  const Tensor x = rand({kElements}, gen, -3, 3);
  const bool fused = state.range(0) != 0;
  for (auto _ : state) {
    Tensor out =
        fused ? backend::activation_to_bf16(backend::UnaryOp::kGeluErf, x,
                                            backend::Bf16Rounding::kToBf16Values)
              : backend::to_bf16(backend::unary(backend::UnaryOp::kGeluErf, x)).to(DType::kF32);
    benchmark::DoNotOptimize(out.raw_data());
  }
  set_bytes_moved(state, 2 * kElements * 4);
}

// Unary maps on x uniform in [-3, 3] (the bulk of pre-activation values); items/s = elements/s.
void BM_unary(benchmark::State& state, backend::UnaryOp op) {
  Generator gen(2);
  const Tensor x = rand({kElements}, gen, -3.0, 3.0);
  for (auto _ : state) {
    Tensor y = backend::unary(op, x, 1.0);
    benchmark::DoNotOptimize(y.raw_data());
  }
  set_bytes_moved(state, 2 * kElements * 4);
  state.SetItemsProcessed(state.iterations() * kElements);
}

// grad_x = grad_y * op'(x): reads x, y and grad_y, writes grad_x.
void BM_unary_backward(benchmark::State& state, backend::UnaryOp op) {
  Generator gen(7);
  const Tensor x = rand({kElements}, gen, -3.0, 3.0);
  const Tensor y = backend::unary(op, x, 1.0);
  const Tensor g = randn({kElements}, gen);
  for (auto _ : state) {
    Tensor gx = backend::unary_backward(op, x, y, g, 1.0);
    benchmark::DoNotOptimize(gx.raw_data());
  }
  set_bytes_moved(state, 4 * kElements * 4);
  state.SetItemsProcessed(state.iterations() * kElements);
}

// SwiGLU's gated activation on gu = [gate | up] [kRows, 2·kDim]; range(0) = 1: the fused
// kernel, 0: the composed elementwise ops.
void BM_gated_activation(benchmark::State& state) {
  Generator gen(12);
  const Tensor gu = rand({kRows, 2 * kDim}, gen, -3.0, 3.0);
  const bool fused = state.range(0) == 1;
  for (auto _ : state) {
    Tensor y;
    if (fused) {
      y = backend::gated_activation(backend::UnaryOp::kSilu, gu);
    } else {
      y = backend::mul(backend::unary(backend::UnaryOp::kSilu, gu.narrow(1, 0, kDim)),
                       gu.narrow(1, kDim, kDim));
    }
    benchmark::DoNotOptimize(y.raw_data());
  }
  set_bytes_moved(state, 3 * kRows * kDim * 4);
  state.SetItemsProcessed(state.iterations() * kRows * kDim);
}

void BM_gated_activation_backward(benchmark::State& state) {
  Generator gen(13);
  const Tensor gu = rand({kRows, 2 * kDim}, gen, -3.0, 3.0);
  const Tensor dy = randn({kRows, kDim}, gen);
  const bool fused = state.range(0) == 1;
  for (auto _ : state) {
    Tensor dgu;
    if (fused) {
      dgu = backend::gated_activation_backward(backend::UnaryOp::kSilu, gu, dy);
    } else {
      const Tensor gate = gu.narrow(1, 0, kDim), up = gu.narrow(1, kDim, kDim);
      const Tensor dgate =
          backend::unary_backward(backend::UnaryOp::kSilu, gate, gate, backend::mul(dy, up));
      const Tensor dup = backend::mul(dy, backend::unary(backend::UnaryOp::kSilu, gate));
      dgu = backend::concat({dgate, dup}, 1);
    }
    benchmark::DoNotOptimize(dgu.raw_data());
  }
  set_bytes_moved(state, 5 * kRows * kDim * 4);  // reads gu (2) and dy (1), writes dgu (2)
  state.SetItemsProcessed(state.iterations() * kRows * kDim);
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

// The vecmath kernels alone, per instruction-set build, on 4096 floats in [-3, 3] that stay
// in L1: compute cost per element (items/s) without memory traffic or allocation.
constexpr int64_t kL1Elements = 4096;
using VecmathForward = void (*backend::vecmath::Kernels::*)(const float*, float*, int64_t);

void BM_vecmath(benchmark::State& state, VecmathForward kernel, backend::vecmath::Isa isa) {
  const backend::vecmath::Kernels& k = backend::vecmath::kernels(isa);
  Generator gen(8);
  const Tensor x = rand({kL1Elements}, gen, -3.0, 3.0);
  Tensor y = Tensor::empty({kL1Elements}, DType::kF32);
  for (auto _ : state) {
    (k.*kernel)(x.data<float>(), y.data<float>(), kL1Elements);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * kL1Elements);
}

// The same through scalar libm calls, as elementwise.cpp ran them before vecmath.
void BM_libm(benchmark::State& state, float (*f)(float)) {
  Generator gen(8);
  const Tensor x = rand({kL1Elements}, gen, -3.0, 3.0);
  Tensor y = Tensor::empty({kL1Elements}, DType::kF32);
  const float* px = x.data<float>();
  float* py = y.data<float>();
  for (auto _ : state) {
    for (int64_t i = 0; i < kL1Elements; ++i) py[i] = f(px[i]);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * kL1Elements);
}

// BM_vecmath/<function>_<build> for every build this CPU can run.
void register_vecmath_benchmarks() {
  using backend::vecmath::Isa;
  using backend::vecmath::Kernels;
  const struct {
    const char* name;
    VecmathForward kernel;
  } functions[] = {{"exp", &Kernels::exp},
                   {"erf", &Kernels::erf},
                   {"tanh", &Kernels::tanh},
                   {"gelu_erf", &Kernels::gelu_erf},
                   {"gelu_tanh", &Kernels::gelu_tanh}};
  for (const auto& f : functions) {
    for (Isa isa : {Isa::kPortable, Isa::kAvx2, Isa::kAvx512}) {
      if (!backend::vecmath::isa_supported(isa)) continue;
      const std::string name =
          std::string("BM_vecmath/") + f.name + "_" + backend::vecmath::isa_name(isa);
      benchmark::RegisterBenchmark(name.c_str(), BM_vecmath, f.kernel, isa);
    }
  }
}

float libm_exp(float x) {
  return std::exp(x);
}
float libm_erf(float x) {
  return std::erf(x);
}
float libm_tanh(float x) {
  return std::tanh(x);
}
float libm_gelu_erf(float x) {
  return 0.5f * x * (1.0f + std::erf(x * 0.70710678f));
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
BENCHMARK(BM_portable_bf16_operand)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_portable_bf16_activation)
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_unary, gelu_erf, backend::UnaryOp::kGeluErf)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_unary, gelu_tanh, backend::UnaryOp::kGeluTanh)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_unary, exp, backend::UnaryOp::kExp)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_unary, tanh, backend::UnaryOp::kTanh)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_unary, sigmoid, backend::UnaryOp::kSigmoid)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_unary, silu, backend::UnaryOp::kSilu)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_unary, elu, backend::UnaryOp::kElu)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_unary, one_plus_elu, backend::UnaryOp::kOnePlusElu)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_unary_backward, gelu_erf, backend::UnaryOp::kGeluErf)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_unary_backward, gelu_tanh, backend::UnaryOp::kGeluTanh)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_unary_backward, silu, backend::UnaryOp::kSilu)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
// The backward maps whose derivative depends on a comparison: the input's sign decides, so a
// branch would mispredict on about every other element of rand(-3, 3).
BENCHMARK_CAPTURE(BM_unary, relu, backend::UnaryOp::kRelu)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_unary_backward, relu, backend::UnaryOp::kRelu)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_unary_backward, elu, backend::UnaryOp::kElu)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_unary_backward, one_plus_elu, backend::UnaryOp::kOnePlusElu)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_unary_backward, abs, backend::UnaryOp::kAbs)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_unary_backward, clamp_min, backend::UnaryOp::kClampMin)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_unary, neg, backend::UnaryOp::kNeg)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_libm, exp, libm_exp);
BENCHMARK_CAPTURE(BM_libm, erf, libm_erf);
BENCHMARK_CAPTURE(BM_libm, tanh, libm_tanh);
BENCHMARK_CAPTURE(BM_libm, gelu_erf, libm_gelu_erf);
BENCHMARK(BM_gated_activation)->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_gated_activation_backward)
    ->Arg(1)
    ->Arg(0)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_layer_norm_forward)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_layer_norm_backward)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_cross_entropy_forward)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_cross_entropy_backward)->Unit(benchmark::kMillisecond)->UseRealTime();

int main(int argc, char** argv) {
  backend::init_runtime();  // FTZ/DAZ on every thread, as in training
  register_vecmath_benchmarks();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
