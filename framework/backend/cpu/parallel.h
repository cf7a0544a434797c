// Threading set-up (OpenMP thread count, denormal flushing) and the parallel-for helper.
#pragma once

#include <cstdint>

#include <omp.h>

namespace rota::backend {

/// Work below this many elements runs on one thread: forking costs more than it saves.
constexpr int64_t kParallelGrain = 32768;

/// Flushes denormals to zero (FTZ/DAZ) on this thread. init_runtime() and set_num_threads()
/// call it on the main thread and on every thread of the (persistent) OpenMP pool.
void flush_denormals();
/// One-time runtime set-up: FTZ/DAZ on every OpenMP thread; returns the thread count.
/// Threads come from OMP_NUM_THREADS (default: all cores).
int init_runtime();
/// Number of threads kernels will use.
int num_threads();
/// The thread count a run uses unless told otherwise: the first number of OMP_NUM_THREADS
/// when it is set to a positive one, else the cores this process may run on (its CPU
/// affinity). Read from the environment and the system, not from OpenMP, whose count another
/// library in the process (PyTorch, say) may have changed.
int default_num_threads();
/// default_num_threads for a given OMP_NUM_THREADS text (null: unset) and core count.
int default_num_threads(const char* omp_num_threads, int cores);
/// Sets the number of threads kernels will use.
void set_num_threads(int n);

/// Runs f(begin, end) over [0, n) split statically into one contiguous range per thread;
/// serially when n * cost_per_item < kParallelGrain.
template <typename F>
void parallel_for(int64_t n, int64_t cost_per_item, F&& f) {
  if (n <= 0) return;
  if (n * cost_per_item < kParallelGrain || n == 1) {
    f(int64_t{0}, n);
    return;
  }
#pragma omp parallel
  {
    const int nt = omp_get_num_threads();
    const int id = omp_get_thread_num();
    const int64_t chunk = (n + nt - 1) / nt;
    const int64_t begin = static_cast<int64_t>(id) * chunk;
    const int64_t end = begin + chunk < n ? begin + chunk : n;
    if (begin < end) f(begin, end);
  }
}

}  // namespace rota::backend
