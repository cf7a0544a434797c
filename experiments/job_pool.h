// Running numbered jobs on a few threads (`rota ablate --jobs N`).
#pragma once

#include <cstddef>
#include <functional>

namespace rota::experiments {

/// Calls work(i) once for each i in [0, count), in increasing order of start, on up to
/// `workers` threads (at least one), and returns when all started jobs are done. Once
/// should_stop() is true no further job starts. work must not throw.
void run_jobs(size_t count, int workers, const std::function<void(size_t)>& work,
              const std::function<bool()>& should_stop);

}  // namespace rota::experiments
