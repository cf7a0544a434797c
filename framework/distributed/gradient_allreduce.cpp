// Bucketed gradient allreduce (see gradient_allreduce.h).
#include "framework/distributed/gradient_allreduce.h"

#include <algorithm>
#include <chrono>
#include <cstring>

namespace rota::distributed {

GradientAllreduce::GradientAllreduce(Communicator& comm, std::vector<Variable> parameters,
                                     int64_t bucket_bytes)
    : comm_(comm), bucket_elements_(std::max<int64_t>(1, bucket_bytes / int64_t{sizeof(float)})) {
  ROTA_CHECK(bucket_bytes > 0, "GradientAllreduce: bucket_bytes must be positive, got {}",
             bucket_bytes);
  for (Variable& p : parameters) {
    if (!p.requires_grad()) continue;
    ROTA_CHECK(p.data().dtype() == DType::kF32,
               "GradientAllreduce: gradients are reduced in f32; a parameter has dtype {}",
               dtype_name(p.data().dtype()));
    trainable_.push_back(std::move(p));
  }
}

std::vector<int64_t> GradientAllreduce::local_gradient_flags() const {
  std::vector<int64_t> flags;
  flags.reserve(trainable_.size());
  for (const Variable& p : trainable_) flags.push_back(p.grad().defined() ? 1 : 0);
  return flags;
}

void GradientAllreduce::sum(std::span<const int64_t> ranks_with_gradient) {
  ROTA_CHECK(ranks_with_gradient.size() == trainable_.size(),
             "GradientAllreduce: {} gradient flags for {} trainable parameters",
             ranks_with_gradient.size(), trainable_.size());
  last_seconds_ = 0;
  last_buckets_ = 0;
  // The gradients taking part, as contiguous f32 arrays: a rank without one adds zeros.
  std::vector<float*> grads;
  std::vector<int64_t> sizes;
  for (size_t i = 0; i < trainable_.size(); ++i) {
    if (ranks_with_gradient[i] == 0) continue;
    Variable& p = trainable_[i];
    if (!p.grad().defined()) {
      p.set_grad(zeros(p.data().shape()));
    } else if (!p.grad().is_contiguous() || p.grad().dtype() != DType::kF32) {
      p.set_grad(p.grad().to(DType::kF32).contiguous());
    }
    grads.push_back(p.grad().data<float>());
    sizes.push_back(p.grad().numel());
  }
  if (comm_.world_size() == 1) return;

  auto reduce = [&](std::span<float> values) {
    const auto start = std::chrono::steady_clock::now();
    comm_.allreduce_sum(values);
    last_seconds_ +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ++last_buckets_;
  };
  // Walk the flat vector bucket by bucket; (g, offset) is where the next bucket starts.
  size_t g = 0;
  int64_t offset = 0;
  while (g < grads.size()) {
    if (sizes[g] - offset >= bucket_elements_) {
      reduce(std::span<float>(grads[g] + offset, static_cast<size_t>(bucket_elements_)));
      offset += bucket_elements_;
    } else {
      // Pack the rest of gradient g and the following ones until the bucket is full.
      staging_.resize(static_cast<size_t>(bucket_elements_));
      struct Piece {
        size_t grad;
        int64_t offset, length;
      };
      std::vector<Piece> pieces;
      int64_t filled = 0;
      while (g < grads.size() && filled < bucket_elements_) {
        const int64_t length = std::min(sizes[g] - offset, bucket_elements_ - filled);
        std::memcpy(staging_.data() + filled, grads[g] + offset, sizeof(float) * length);
        pieces.push_back({g, offset, length});
        filled += length;
        offset += length;
        if (offset == sizes[g]) ++g, offset = 0;
      }
      reduce(std::span<float>(staging_.data(), static_cast<size_t>(filled)));
      int64_t read = 0;
      for (const Piece& piece : pieces) {
        std::memcpy(grads[piece.grad] + piece.offset, staging_.data() + read,
                    sizeof(float) * piece.length);
        read += piece.length;
      }
      continue;
    }
    if (offset == sizes[g]) ++g, offset = 0;
  }
}

}  // namespace rota::distributed
