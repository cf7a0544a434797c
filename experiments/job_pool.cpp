// Running numbered jobs on a few threads (see job_pool.h).
#include "experiments/job_pool.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

namespace rota::experiments {

void run_jobs(size_t count, int workers, const std::function<void(size_t)>& work,
              const std::function<bool()>& should_stop) {
  std::atomic<size_t> next{0};
  auto worker = [&] {
    while (!should_stop()) {
      const size_t i = next.fetch_add(1);
      if (i >= count) return;
      work(i);
    }
  };
  const size_t threads = std::min(count, static_cast<size_t>(std::max(1, workers)));
  if (threads <= 1) {
    worker();
    return;
  }
  std::vector<std::thread> pool;
  for (size_t t = 0; t < threads; ++t) pool.emplace_back(worker);
  for (std::thread& thread : pool) thread.join();
}

}  // namespace rota::experiments
