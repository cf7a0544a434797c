// Bucketed gradient allreduce across ranks: every gradient becomes the rank-ordered sum, whether it
// is reduced in place, split over buckets or packed with others; missing gradients count as zeros.
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "framework/distributed/gradient_allreduce.h"
#include "tests/framework/distributed/mpi/mpi_world.h"

namespace rota::distributed {
namespace ROTA_TEST_FILE_NS {

using testing::rank_ordered_sum;
using testing::rank_values;
using testing::world;

Tensor tensor_of(const std::vector<float>& values, const Shape& shape) {
  Tensor t = Tensor::empty(shape);
  std::memcpy(t.data<float>(), values.data(), values.size() * sizeof(float));
  return t;
}

TEST(GradientAllreduce, EveryGradientBecomesTheRankOrderedSum) {
  Communicator& comm = world();
  // Sizes around a bucket of 1000 floats: small ones packed together, one split over several
  // buckets (some reduced in place), an empty one.
  const std::vector<int64_t> sizes = {3, 1000, 2500, 1, 0, 997, 4};
  std::vector<Variable> params;
  for (size_t i = 0; i < sizes.size(); ++i) {
    Variable p(zeros({sizes[i]}), true);
    p.set_grad(tensor_of(rank_values<float>(comm.rank(), static_cast<size_t>(sizes[i]), 40 + i),
                         {sizes[i]}));
    params.push_back(p);
  }
  Variable frozen(zeros({8}), false);
  params.insert(params.begin() + 2, frozen);
  GradientAllreduce reducer(comm, params, /*bucket_bytes=*/1000 * sizeof(float));
  std::vector<int64_t> flags = reducer.local_gradient_flags();
  comm.allreduce_sum(std::span<int64_t>(flags));
  reducer.sum(flags);
  int64_t total = 0;
  for (int64_t n : sizes) total += n;
  EXPECT_EQ(reducer.last_bucket_count(), (total + 999) / 1000);
  EXPECT_GE(reducer.last_allreduce_seconds(), 0.0);
  size_t k = 0;
  for (const Variable& p : params) {
    if (!p.requires_grad()) continue;
    const std::vector<float> expected =
        rank_ordered_sum<float>(comm.world_size(), static_cast<size_t>(sizes[k]), 40 + k);
    ASSERT_TRUE(p.grad().defined());
    EXPECT_EQ(std::memcmp(p.grad().data<float>(), expected.data(), expected.size() * sizeof(float)),
              0)
        << "parameter " << k << " of " << sizes[k] << " elements";
    ++k;
  }
  EXPECT_FALSE(frozen.grad().defined());
}

TEST(GradientAllreduce, AGradientOnSomeRanksOnlyIsSummedWithZerosEverywhere) {
  Communicator& comm = world();
  Variable only_rank0(zeros({5}), true), nowhere(zeros({3}), true);
  if (comm.rank() == 0) only_rank0.set_grad(full({5}, 2.5));
  GradientAllreduce reducer(comm, {only_rank0, nowhere}, 64);
  std::vector<int64_t> flags = reducer.local_gradient_flags();
  comm.allreduce_sum(std::span<int64_t>(flags));
  EXPECT_EQ(flags, (std::vector<int64_t>{1, 0}));
  reducer.sum(flags);
  ASSERT_TRUE(only_rank0.grad().defined());
  EXPECT_EQ(only_rank0.grad().to_double_vector(), std::vector<double>(5, 2.5));
  EXPECT_FALSE(nowhere.grad().defined());
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::distributed
