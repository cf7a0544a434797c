// Timing square products through backend::matmul for the MFU ceiling (see matmul_ceiling.h).
#include "app/run/matmul_ceiling.h"

#include <algorithm>
#include <chrono>

#include "framework/backend/primitives/matmul.h"
#include "framework/base/error.h"
#include "framework/tensor/random.h"

namespace rota::app {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// An n×n operand with values in [-1, 1) (no denormals, no overflow), in the precision's type.
Tensor square_operand(int64_t n, MatmulPrecision precision, Generator& gen) {
  const Tensor values = rand({n, n}, gen, -1.0, 1.0, DType::kF32);
  return precision == MatmulPrecision::kBF16 ? round_to_bf16_operand(values) : values;
}

}  // namespace

MatmulCeiling measure_matmul_ceiling(MatmulPrecision precision,
                                     const MatmulCeilingOptions& options) {
  ROTA_CHECK(!options.sizes.empty() && options.min_repetitions >= 1 &&
                 options.max_repetitions >= options.min_repetitions,
             "matmul ceiling: need at least one size and 1 <= min_repetitions <= max_repetitions");
  MatmulCeiling ceiling;
  const Clock::time_point start = Clock::now();
  Generator gen(1);
  for (const int64_t n : options.sizes) {
    const double flop =
        2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n);
    if (ceiling.products > 0) {
      // Skip a size whose repetitions would overrun the budget at the best rate seen so far.
      const double predicted = options.min_repetitions * flop / (ceiling.gflops * 1e9);
      if (seconds_since(start) + predicted > options.budget_seconds) continue;
    }
    const Tensor a = square_operand(n, precision, gen);
    const Tensor b = square_operand(n, precision, gen);
    for (int rep = 0; rep < options.max_repetitions; ++rep) {
      if (rep >= options.min_repetitions && seconds_since(start) > options.budget_seconds) break;
      const Clock::time_point product_start = Clock::now();
      const Tensor c = backend::matmul(a, b);
      const double seconds = seconds_since(product_start);
      ++ceiling.products;
      const double gflops = flop / seconds / 1e9;
      if (gflops > ceiling.gflops) {
        ceiling.gflops = gflops;
        ceiling.size = n;
      }
    }
  }
  ceiling.seconds = seconds_since(start);
  return ceiling;
}

}  // namespace rota::app
