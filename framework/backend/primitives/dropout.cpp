// Dropout kernel: fixed blocks of elements, each with its own generator derived from the seed.
#include "framework/backend/primitives/dropout.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "framework/backend/cpu/dispatch.h"
#include "framework/backend/cpu/parallel.h"
#include "framework/base/seed_mix.h"
#include "framework/tensor/random.h"

namespace rota::backend {

namespace {

// Seed of block b's stream. Hashing the block index (rather than seed + b) keeps neighbouring
// blocks' generator states unrelated.
uint64_t block_seed(uint64_t seed, int64_t block) {
  return mix64(seed ^ mix64(static_cast<uint64_t>(block) + kGoldenGamma));
}

static_assert(kDropoutBlock % 2 == 0, "two 32-bit draws per 64-bit generator output");

void check_probability(double p) {
  ROTA_CHECK(p >= 0.0 && p < 1.0, "dropout: p = {} is outside [0, 1)", p);
}

// x, y: [n] row-major. y_i = x_i * (u_i >= threshold ? 1 / (1 - p) : 0), where u_i is a uniform
// 32-bit integer (two per 64-bit draw) and threshold = floor(p * 2^32), so
// P(keep) = 1 - threshold / 2^32 = 1 - p to within 2^-32.
// Each block first draws its bits into a small buffer and then applies them in a separate
// loop: the generator is sequential, but the select loop vectorises.
template <typename T>
void dropout_blocks(const T* x, T* y, int64_t n, double p, uint64_t seed) {
  const uint32_t threshold = static_cast<uint32_t>(std::ldexp(p, 32));  // p < 1: fits
  const T scale = static_cast<T>(1.0 / (1.0 - p));
  const int64_t blocks = (n + kDropoutBlock - 1) / kDropoutBlock;
  parallel_for(blocks, kDropoutBlock * 4, [&](int64_t b_begin, int64_t b_end) {
    // Local copies: `cond ? scale : 0` reading a captured variable is a conditional load
    // through the closure pointer, which stops GCC from vectorising the select loop.
    const T keep_scale = scale;
    const uint32_t keep_threshold = threshold;
    uint32_t bits[kDropoutBlock];
    for (int64_t b = b_begin; b < b_end; ++b) {
      Generator gen(block_seed(seed, b));
      const int64_t begin = b * kDropoutBlock;
      const int64_t len = std::min(n - begin, kDropoutBlock);
      for (int64_t i = 0; i < len; i += 2) {
        const uint64_t draw = gen.next_u64();
        bits[i] = static_cast<uint32_t>(draw);
        bits[i + 1] = static_cast<uint32_t>(draw >> 32);  // kDropoutBlock is even: in bounds
      }
      // Multiply by a selected constant rather than select between x * scale and 0: GCC keeps
      // FP arithmetic under a condition out of vector code (-ftrapping-math), but a select
      // of two constants vectorises. As in PyTorch, a dropped inf/NaN becomes NaN.
      const T* xb = x + begin;
      T* yb = y + begin;
#pragma omp simd
      for (int64_t i = 0; i < len; ++i) {
        yb[i] = xb[i] * (bits[i] >= keep_threshold ? keep_scale : T(0));
      }
    }
  });
}

}  // namespace

Tensor dropout_apply(const Tensor& x_in, double p, uint64_t seed) {
  check_probability(p);
  ROTA_CHECK(x_in.defined(), "dropout: input is undefined");
  const Tensor x = x_in.contiguous();
  Tensor y = Tensor::empty(x.shape(), x.dtype());
  dispatch_floating(x.dtype(), "dropout", [&](auto tag) {
    using T = decltype(tag);
    dropout_blocks<T>(x.data<T>(), y.data<T>(), x.numel(), p, seed);
  });
  return y;
}

Tensor dropout_mask(const Shape& shape, DType dtype, double p, uint64_t seed) {
  return dropout_apply(ones(shape, dtype), p, seed);
}

}  // namespace rota::backend
