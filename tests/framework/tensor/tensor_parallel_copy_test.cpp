// Large strided copies take the multi-threaded row path; results must match index arithmetic.
#include <omp.h>

#include <gtest/gtest.h>

#include "framework/tensor/tensor.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

TEST(ParallelCopy, PermutedAndConvertedCopiesMatchIndexArithmetic) {
  const int64_t a = 37, b = 41, c = 53;  // 80k elements: above the parallel threshold
  Tensor base = Tensor::empty({a, b, c}, DType::kF64);
  double* p = base.data<double>();
  for (int64_t i = 0; i < a * b * c; ++i) p[i] = static_cast<double>(i);
  for (int threads : {1, 2, 3}) {
    omp_set_num_threads(threads);
    const Tensor permuted = base.permute({2, 0, 1}).contiguous();   // [c, a, b]
    const Tensor converted = base.transpose(0, 2).to(DType::kF32);  // [c, b, a]
    for (int64_t k = 0; k < c; k += 7) {
      for (int64_t i = 0; i < a; i += 5) {
        for (int64_t j = 0; j < b; j += 3) {
          const double want = static_cast<double>((i * b + j) * c + k);
          ASSERT_EQ(permuted.at({k, i, j}), want) << threads << " threads";
          ASSERT_EQ(converted.at({k, j, i}), want) << threads << " threads";
        }
      }
    }
    // Every element, not just a sample, for one layout.
    const std::vector<double> all = permuted.to_double_vector();
    int64_t flat = 0;
    for (int64_t k = 0; k < c; ++k) {
      for (int64_t i = 0; i < a; ++i) {
        for (int64_t j = 0; j < b; ++j) {
          ASSERT_EQ(all[flat++], static_cast<double>((i * b + j) * c + k));
        }
      }
    }
  }
  omp_set_num_threads(omp_get_num_procs());
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
