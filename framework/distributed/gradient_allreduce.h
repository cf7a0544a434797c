// Summing a model's gradients over the ranks through a flat, bucketed f32 buffer.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "framework/autograd/variable.h"
#include "framework/distributed/communicator.h"

namespace rota::distributed {

/// Bytes of gradients reduced per allreduce call: large enough that per-call latency is small
/// next to the transfer, small enough that the staging buffer stays in cache-friendly sizes.
inline constexpr int64_t kDefaultBucketBytes = int64_t{4} << 20;

/// Sums the gradients of the trainable parameters (requires_grad) over the ranks. The gradients
/// are seen as one flat f32 vector (parameters in the given order) and reduced a bucket of
/// bucket_bytes at a time: a bucket that lies inside one gradient is reduced in place, otherwise
/// its pieces are packed into a staging buffer, reduced and copied back. Gradients are summed,
/// not averaged: callers scale each rank's loss (by 1 / (accumulation x world size)) so that
/// the sum is the mean. The reduction is Communicator::allreduce_sum's, in rank order, so every
/// rank ends with the same bits. Reduction starts after the backward pass (no overlap).
class GradientAllreduce {
 public:
  GradientAllreduce(Communicator& comm, std::vector<Variable> parameters,
                    int64_t bucket_bytes = kDefaultBucketBytes);

  /// Per trainable parameter: 1 when it has a gradient on this rank, else 0. Sum these over the
  /// ranks (with the step's other counters) and pass the result to sum().
  std::vector<int64_t> local_gradient_flags() const;
  /// Sums every gradient over the ranks (collective). ranks_with_gradient[i] (the summed flags):
  /// 0 leaves trainable parameter i without a gradient on every rank; otherwise a rank without
  /// one contributes zeros and receives the sum, so all ranks agree on which parameters update.
  void sum(std::span<const int64_t> ranks_with_gradient);

  /// Seconds spent inside allreduce calls by the last sum().
  double last_allreduce_seconds() const { return last_seconds_; }
  /// Allreduce calls made by the last sum().
  int64_t last_bucket_count() const { return last_buckets_; }
  size_t trainable_count() const { return trainable_.size(); }

 private:
  Communicator& comm_;
  std::vector<Variable> trainable_;
  int64_t bucket_elements_;
  std::vector<float> staging_;
  double last_seconds_ = 0;
  int64_t last_buckets_ = 0;
};

}  // namespace rota::distributed
