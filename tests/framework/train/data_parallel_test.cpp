// The data-parallel step on ranks simulated by threads (no MPI needed): W ranks with one
// micro-batch each take bit-identical steps to one process accumulating the W micro-batches;
// bucketed gradient sums, sharded sums and the failure guard behave across ranks.
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "framework/autograd/ops/elementwise.h"
#include "framework/autograd/ops/reduce.h"
#include "framework/distributed/gradient_allreduce.h"
#include "framework/distributed/run_guard.h"
#include "framework/distributed/sharded_sums.h"
#include "framework/distributed/single_process_communicator.h"
#include "framework/optim/adam.h"
#include "framework/tensor/random.h"
#include "framework/train/train_step.h"
#include "tests/framework/distributed/thread_group.h"

namespace rota::distributed {
namespace ROTA_TEST_FILE_NS {

using testing::ThreadGroup;

constexpr int kWorld = 3;
constexpr int64_t kRows = 5;  // rows per micro-batch

// Micro-batch m of a fixed regression problem: x [kRows, 4], y [kRows, 4].
struct Batch {
  Tensor x, y;
};
Batch micro_batch(int64_t m) {
  Generator gen(100 + static_cast<uint64_t>(m));
  return {randn({kRows, 4}, gen), randn({kRows, 4}, gen)};
}

// loss = mean((x * w + b - y)^2) with w, b of shape [4]: elementwise ops only.
Variable loss_of(const Variable& w, const Variable& b, const Batch& batch) {
  return mean(square(Variable(batch.x) * w + b - Variable(batch.y)));
}

struct Model {
  Variable w, b;
  Model() {
    Generator gen(7);
    w = Variable(randn({4}, gen), true);
    b = Variable(randn({4}, gen), true);
  }
};

// Runs `steps` optimizer steps; micro-batch of step s, micro k on rank r: s * kWorld + r * A + k
// (so A = kWorld on one rank and A = 1 on kWorld ranks see the same micro-batches in the same
// order). Returns the final weights, the step losses and token counts.
struct Outcome {
  std::vector<float> weights;
  std::vector<double> losses;
  std::vector<int64_t> tokens;
};
Outcome train(std::shared_ptr<Communicator> comm, int64_t accumulation, int steps) {
  Model model;
  optim::AdamW optimizer({model.w, model.b},
                         optim::AdamOptions{0.05, 0.01, 0.9, 0.999, 1e-8, true});
  auto schedule = optim::make_schedule({optim::ScheduleName::kConstant, 0.05});
  train::StepOptions options{accumulation, 0.5};
  options.communicator = comm;
  options.bucket_bytes = 12;  // 3 floats: buckets split w and pack w's tail with b
  train::StepRunner runner({model.w, model.b}, optimizer, *schedule, options);
  Outcome outcome;
  for (int s = 0; s < steps; ++s) {
    int64_t k = 0;
    const train::StepResult result = runner.run([&] {
      const int64_t m = s * kWorld + comm->rank() * accumulation + k++;
      return train::MicroBatch{loss_of(model.w, model.b, micro_batch(m)), kRows};
    });
    outcome.losses.push_back(result.loss);
    outcome.tokens.push_back(result.tokens);
  }
  for (const Variable& p : {model.w, model.b}) {
    const float* data = p.data().data<float>();
    outcome.weights.insert(outcome.weights.end(), data, data + p.data().numel());
  }
  return outcome;
}

TEST(DataParallelStep, RanksWithOneMicroBatchEqualOneProcessAccumulatingThemBitForBit) {
  const Outcome alone = train(single_process(), kWorld, 4);
  std::vector<Outcome> ranks(kWorld);
  ThreadGroup group(kWorld);
  group.run([&](Communicator& comm) {
    // A non-owning shared_ptr for the options.
    ranks[comm.rank()] = train(std::shared_ptr<Communicator>(&comm, [](Communicator*) {}), 1, 4);
  });
  for (int r = 0; r < kWorld; ++r) {
    EXPECT_EQ(std::memcmp(ranks[r].weights.data(), alone.weights.data(),
                          alone.weights.size() * sizeof(float)),
              0)
        << "rank " << r;
    EXPECT_EQ(ranks[r].losses, alone.losses) << "rank " << r;
    EXPECT_EQ(ranks[r].tokens, alone.tokens) << "rank " << r;
  }
}

TEST(DataParallelStep, ANonFiniteLossOnOneRankStopsEveryRankBeforeTheUpdate) {
  ThreadGroup group(kWorld);
  std::mutex mutex;
  std::vector<std::string> messages(kWorld);
  std::vector<bool> unchanged(kWorld);
  group.run([&](Communicator& comm) {
    Model model;
    const std::vector<double> before = model.w.data().to_double_vector();
    optim::AdamW optimizer({model.w, model.b},
                           optim::AdamOptions{0.05, 0.0, 0.9, 0.999, 1e-8, true});
    auto schedule = optim::make_schedule({optim::ScheduleName::kConstant, 0.05});
    train::StepOptions options{2, 1.0};
    options.communicator = std::shared_ptr<Communicator>(&comm, [](Communicator*) {});
    train::StepRunner runner({model.w, model.b}, optimizer, *schedule, options);
    int micro = 0;
    std::string message;
    try {
      runner.run([&] {
        const bool poisoned = comm.rank() == 1 && micro++ == 1;
        Variable loss = loss_of(model.w, model.b, micro_batch(comm.rank()));
        return train::MicroBatch{poisoned ? log(loss - 1e9) : loss, kRows};
      });
    } catch (const train::NonFiniteError& e) {
      message = e.what();
    }
    const std::lock_guard<std::mutex> lock(mutex);
    messages[comm.rank()] = message;
    unchanged[comm.rank()] = model.w.data().to_double_vector() == before;
  });
  for (int r = 0; r < kWorld; ++r) {
    EXPECT_NE(messages[r].find("(rank 1, micro-batch 2)"), std::string::npos) << messages[r];
    EXPECT_TRUE(unchanged[r]) << "rank " << r;
  }
}

TEST(DataParallelStep, BucketsOfEveryShapeGiveTheRankOrderedSum) {
  ThreadGroup group(kWorld);
  const std::vector<int64_t> sizes = {7, 1, 30, 0, 12};
  group.run([&](Communicator& comm) {
    std::vector<Variable> params;
    for (size_t i = 0; i < sizes.size(); ++i) {
      Variable p(zeros({sizes[i]}), true);
      Generator gen(1000 * i + comm.rank());
      if (!(i == 2 && comm.rank() == 2)) p.set_grad(randn({sizes[i]}, gen, 0, 1e3));
      params.push_back(p);
    }
    GradientAllreduce reducer(comm, params, /*bucket_bytes=*/10 * sizeof(float));
    std::vector<int64_t> flags = reducer.local_gradient_flags();
    comm.allreduce_sum(std::span<int64_t>(flags));
    EXPECT_EQ(flags, (std::vector<int64_t>{3, 3, 2, 3, 3}));
    reducer.sum(flags);
    EXPECT_EQ(reducer.last_bucket_count(), 5);  // 50 floats in buckets of 10
    for (size_t i = 0; i < sizes.size(); ++i) {
      std::vector<float> expected(static_cast<size_t>(sizes[i]), 0.0f);
      for (int r = 0; r < kWorld; ++r) {
        if (i == 2 && r == 2) continue;  // that rank had no gradient: zeros
        Generator gen(1000 * i + r);
        const Tensor g = randn({sizes[i]}, gen, 0, 1e3);
        for (int64_t j = 0; j < sizes[i]; ++j) {
          expected[j] = r == 0 ? g.data<float>()[j] : expected[j] + g.data<float>()[j];
        }
      }
      ASSERT_TRUE(params[i].grad().defined());
      ASSERT_EQ(params[i].grad().numel(), sizes[i]);
      // Bitwise equality; an empty parameter has nothing to compare (and memcmp must not see
      // its null data pointer).
      if (!expected.empty()) {
        EXPECT_EQ(std::memcmp(params[i].grad().data<float>(), expected.data(),
                              expected.size() * sizeof(float)),
                  0)
            << "parameter " << i << " on rank " << comm.rank();
      }
    }
  });
}

TEST(DataParallelStep, ShardedSumsGiveTheInOrderSumOnEveryRank) {
  const std::vector<double> values = {1e16, 1.0, -1e16, 1.0, 3.5, 1e-3, 7.0};
  double expected = 0;
  for (double v : values) expected += v;
  ThreadGroup group(kWorld);
  group.run([&](Communicator& comm) {
    ShardedSums sums(comm, static_cast<int64_t>(values.size()), 1, 1);
    int64_t mine = 0;
    for (int64_t i = 0; i < static_cast<int64_t>(values.size()); ++i) {
      if (!sums.mine(i)) continue;
      ++mine;
      sums.set(i, {{values[static_cast<size_t>(i)]}}, {{1}});
    }
    EXPECT_EQ(mine, comm.rank() == 0 ? 3 : 2);  // items 0,3,6 / 1,4 / 2,5
    const ShardedSums::Totals totals = sums.totals();
    EXPECT_EQ(totals.doubles[0], expected) << "rank " << comm.rank();
    EXPECT_EQ(totals.ints[0], static_cast<int64_t>(values.size()));
  });
}

TEST(DataParallelStep, ACollectiveErrorEndsEveryRankWithItsExitCode) {
  ThreadGroup group(kWorld);
  std::vector<int> codes(kWorld, -1);
  group.run([&](Communicator& comm) {
    codes[comm.rank()] = run_on_every_rank(
        comm, []() -> int { throw CollectiveError("every rank at once", 2); },
        [](const std::exception&) { return 1; });
  });
  EXPECT_EQ(codes, std::vector<int>(kWorld, 2));
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::distributed
