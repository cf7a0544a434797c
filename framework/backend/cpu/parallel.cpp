// OpenMP thread count and FTZ/DAZ set-up.
#include "framework/backend/cpu/parallel.h"

#include <omp.h>
#include <pmmintrin.h>
#include <xmmintrin.h>

namespace rota::backend {

void flush_denormals() {
  // Denormal arithmetic is ~100x slower on x86; gradients reach that range late in training.
  _MM_SET_FLUSH_ZERO_MODE(_MM_FLUSH_ZERO_ON);
  _MM_SET_DENORMALS_ZERO_MODE(_MM_DENORMALS_ZERO_ON);
}

int init_runtime() {
  static const int threads = [] {
    flush_denormals();
    // MXCSR is per thread: set it inside every thread of the OpenMP pool (which persists).
#pragma omp parallel
    flush_denormals();
    return omp_get_max_threads();
  }();
  return threads;
}

int num_threads() {
  return omp_get_max_threads();
}

void set_num_threads(int n) {
  omp_set_num_threads(n);
#pragma omp parallel
  flush_denormals();
}

}  // namespace rota::backend
