// The batch loader's resumable position: a plain struct the training state stores.
#pragma once

#include <cstdint>

namespace rota::data {

/// Where a BatchLoader is: the epoch, and how many examples of that epoch's global order
/// (all ranks together) have been handed out. Saving it and restoring it into a loader with
/// the same dataset size, seed and options continues with exactly the same batches.
struct LoaderCursor {
  int64_t epoch = 0;
  int64_t position = 0;
  bool operator==(const LoaderCursor&) const = default;
};

}  // namespace rota::data
