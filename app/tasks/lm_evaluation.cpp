// Evaluation sums of the language-model tasks (causal and masked).
#include "app/tasks/lm_evaluation.h"

#include <algorithm>

#include "framework/distributed/sharded_sums.h"

namespace rota::app {

LmLossTotals lm_loss_totals(
    distributed::Communicator& comm, data::BatchLoader& loader, int64_t max_batches,
    const std::function<data::LmBatch(const std::vector<int64_t>& indices)>& batch_of,
    const std::function<double(const data::LmBatch& batch)>& mean_loss) {
  int64_t batches = loader.batches_per_epoch();
  if (max_batches > 0) batches = std::min(batches, max_batches);
  // Batch b runs on rank b % ranks; the sums are added in batch order (one process's numbers).
  distributed::ShardedSums sums(comm, batches, 1, 1);
  for (int64_t b = 0; b < batches; ++b) {
    const std::vector<int64_t> indices = loader.next().indices;
    if (!sums.mine(b)) continue;
    const data::LmBatch batch = batch_of(indices);
    if (batch.target_count == 0) continue;
    const double loss_sum = mean_loss(batch) * static_cast<double>(batch.target_count);
    sums.set(b, {{loss_sum}}, {{batch.target_count}});
  }
  const distributed::ShardedSums::Totals totals = sums.totals();
  return {totals.doubles[0], totals.ints[0]};
}

}  // namespace rota::app
