// StepRunner: accumulation equals a full batch, non-finite values stop before any update.
#include <cmath>

#include <gtest/gtest.h>

#include "framework/autograd/ops/elementwise.h"
#include "framework/autograd/ops/matmul.h"
#include "framework/autograd/ops/reduce.h"
#include "framework/optim/adam.h"
#include "framework/optim/sgd.h"
#include "framework/tensor/random.h"
#include "framework/train/train_step.h"
#include "tests/support/allclose.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

// Mean squared error of a linear map on rows [begin, end) of (x, y).
Variable mse(const Variable& w, const Tensor& x, const Tensor& y, int64_t begin, int64_t end) {
  const Variable pred = matmul(Variable(x.narrow(0, begin, end - begin)), w);
  return mean(square(pred - Variable(y.narrow(0, begin, end - begin))));
}

TEST(StepRunner, AccumulatedMicroBatchesEqualOneFullBatch) {
  Generator gen(1);
  const Tensor x = randn({8, 3}, gen, 0, 1, DType::kF64);
  const Tensor y = randn({8, 2}, gen, 0, 1, DType::kF64);
  const Tensor w0 = randn({3, 2}, gen, 0, 1, DType::kF64);
  auto train = [&](int64_t accumulation) {
    Variable w(w0.clone(), true);
    optim::AdamW opt({w}, optim::AdamOptions{0.1, 0.01, 0.9, 0.999, 1e-8, true});
    auto schedule = optim::make_schedule({optim::ScheduleName::kConstant, 0.1});
    train::StepRunner runner({w}, opt, *schedule, {accumulation, 0.5});
    for (int step = 0; step < 3; ++step) {
      int64_t micro = 0;
      runner.run([&] {
        const int64_t rows = 8 / accumulation;
        const int64_t begin = micro++ * rows;
        return train::MicroBatch{mse(w, x, y, begin, begin + rows), rows};
      });
    }
    return w.data();
  };
  EXPECT_TRUE(testing::allclose(train(2), train(1), 1e-12, 1e-12));
  EXPECT_TRUE(testing::allclose(train(4), train(1), 1e-12, 1e-12));
}

TEST(StepRunner, ReportsPreClipNormAndScheduleLr) {
  Variable w(ones({2}, DType::kF64), true);
  optim::SGD opt({w}, optim::SgdOptions{1.0});
  auto schedule = optim::make_schedule({optim::ScheduleName::kLinear, 1.0, 0.0, 0, 0.0, 4});
  train::StepRunner runner({w}, opt, *schedule, {1, 1.0});
  // loss = 3·(w0 + w1) → gradient (3, 3), norm 3√2, clipped to norm 1.
  const auto r = runner.run([&] { return train::MicroBatch{sum(w * 3.0), 1}; });
  EXPECT_NEAR(r.grad_norm, 3.0 * std::sqrt(2.0), 1e-12);
  EXPECT_EQ(r.step, 1);
  EXPECT_NEAR(r.lr, schedule->lr(1), 1e-15);
  const double moved = (1.0 - w.data().at({0})) / r.lr;  // SGD moved by lr · clipped grad
  EXPECT_NEAR(moved, 1.0 / std::sqrt(2.0), 1e-12);
}

TEST(StepRunner, NonFiniteLossStopsBeforeUpdating) {
  Variable w(ones({2}, DType::kF64), true);
  optim::SGD opt({w}, optim::SgdOptions{1.0});
  auto schedule = optim::make_schedule({optim::ScheduleName::kConstant, 1.0});
  train::StepRunner runner({w}, opt, *schedule, {1, 1.0});
  EXPECT_THROW(runner.run([&] {
    return train::MicroBatch{sum(log(w - 2.0)), 1};
  }),
               train::NonFiniteError);
  EXPECT_TRUE(testing::allclose(w.data(), ones({2}, DType::kF64), 0, 0));
  EXPECT_EQ(runner.steps_done(), 0);
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
