// OpenMP thread count and FTZ/DAZ set-up.
#include "framework/backend/cpu/parallel.h"

#include <sched.h>
#include <unistd.h>

#include <cstdlib>

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

int default_num_threads(const char* omp_num_threads, int cores) {
  if (omp_num_threads != nullptr) {
    // "4" or "4,2" (one count per nesting level): the first one is the outer level's.
    char* end = nullptr;
    const long first = std::strtol(omp_num_threads, &end, 10);
    const bool whole = end != omp_num_threads && (*end == '\0' || *end == ',');
    if (whole && first > 0 && first <= 4096) return static_cast<int>(first);
  }
  return cores > 0 ? cores : 1;
}

int default_num_threads() {
  int cores = 0;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0) cores = CPU_COUNT(&set);
  if (cores <= 0) cores = static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN));
  return default_num_threads(std::getenv("OMP_NUM_THREADS"), cores);
}

void set_num_threads(int n) {
  omp_set_num_threads(n);
#pragma omp parallel
  flush_denormals();
}

}  // namespace rota::backend
