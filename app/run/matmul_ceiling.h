// The machine's matmul ceiling, measured on the spot: the denominator of `rota bench train`'s MFU.
#pragma once

#include <cstdint>
#include <vector>

#include "framework/autograd/precision.h"

namespace rota::app {

struct MatmulCeilingOptions {
  /// Square products n×n×n tried, smallest first; a size is skipped when its products would
  /// not fit in what is left of the budget.
  std::vector<int64_t> sizes = {2048, 3072, 4096};
  /// No new product starts after this many seconds (the smallest size always runs
  /// min_repetitions times, however long that takes).
  double budget_seconds = 1.0;
  /// Timed products per size at least (the best counts, so the first one's primitive creation
  /// and page faults do not) and at most.
  int min_repetitions = 2;
  int max_repetitions = 5;
};

struct MatmulCeiling {
  double gflops = 0;     // best rate over every timed product (2·n³ FLOP each)
  int64_t size = 0;      // the n of that product
  int64_t products = 0;  // products timed
  double seconds = 0;    // time the measurement took
};

/// The best rate of backend::matmul on square products in `precision`: f32·f32, or for kBF16
/// the operands the matmul op multiplies (bf16 tensors where oneDNN has bf16 kernels, their
/// bf16-rounded f32 values on the portable path). Same oneDNN, same primitive cache and the
/// current OpenMP thread count as the training steps, so model FLOP/s over this is the MFU of
/// the hardware path the run actually uses.
MatmulCeiling measure_matmul_ceiling(MatmulPrecision precision,
                                     const MatmulCeilingOptions& options = {});

}  // namespace rota::app
