// The loss of a language model over an evaluation split: batches shared round-robin across
// ranks, their sums added in batch order.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "data/dataset/batch.h"
#include "data/loader/batch_loader.h"
#include "framework/distributed/communicator.h"

namespace rota::app {

/// An evaluation's totals: the loss summed over every target, and the number of targets.
struct LmLossTotals {
  double loss_sum = 0;  // Σ over batches of (mean loss over the batch's targets) × target count
  int64_t targets = 0;
};

/// Runs the first max_batches batches of `loader` (all of them when max_batches <= 0): batch b
/// on rank b % ranks, which builds it with batch_of(indices) and scores it with mean_loss (the
/// model's loss averaged over the batch's targets); batches without targets add nothing. The
/// sums are added in batch order, so every rank gets the totals of one process running all
/// batches. Collective when data-parallel: call it on every rank.
LmLossTotals lm_loss_totals(
    distributed::Communicator& comm, data::BatchLoader& loader, int64_t max_batches,
    const std::function<data::LmBatch(const std::vector<int64_t>& indices)>& batch_of,
    const std::function<double(const data::LmBatch& batch)>& mean_loss);

}  // namespace rota::app
