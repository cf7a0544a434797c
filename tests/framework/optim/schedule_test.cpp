// LR schedules: values at chosen steps against the formulas, anchors, errors, driving an optimizer.
#include "framework/optim/schedule.h"

#include <cmath>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "framework/optim/sgd.h"

namespace rota::optim {
namespace ROTA_TEST_FILE_NS {

constexpr double kPi = 3.14159265358979323846;

ScheduleOptions make_options(ScheduleName name, double lr, double min_lr, int64_t warmup,
                             double start_factor, int64_t total) {
  return {.name = name,
          .lr = lr,
          .min_lr = min_lr,
          .warmup_steps = warmup,
          .warmup_start_factor = start_factor,
          .total_steps = total};
}

/// The documented formula, written independently of the implementation.
double expected_lr(const ScheduleOptions& o, int64_t t) {
  const double W = static_cast<double>(o.warmup_steps), T = static_cast<double>(o.total_steps);
  if (o.warmup_steps > 0 && t <= o.warmup_steps) {
    return o.lr * (o.warmup_start_factor + (1 - o.warmup_start_factor) * t / W);
  }
  const double p = std::min(1.0, std::max(0.0, (t - W) / (T - W)));
  switch (o.name) {
    case ScheduleName::kConstant:
      return o.lr;
    case ScheduleName::kLinear:
      return o.lr - (o.lr - o.min_lr) * p;
    case ScheduleName::kCosine:
      return o.min_lr + 0.5 * (o.lr - o.min_lr) * (1 + std::cos(kPi * p));
    case ScheduleName::kInverseSqrt:
      return std::max(o.min_lr, o.lr * std::sqrt(W / t));
  }
  return NAN;
}

struct ScheduleCase {
  std::string name;
  ScheduleOptions options;
  friend void PrintTo(const ScheduleCase& c, std::ostream* os) { *os << c.name; }
};

class ScheduleFormula : public ::testing::TestWithParam<ScheduleCase> {};

TEST_P(ScheduleFormula, MatchesAtEveryStep) {
  const ScheduleOptions& o = GetParam().options;
  const auto schedule = make_schedule(o);
  EXPECT_EQ(schedule->options().name, o.name);
  const int64_t horizon = std::max<int64_t>(o.total_steps, 4 * o.warmup_steps) + 20;
  for (int64_t t = 0; t <= horizon; ++t) {
    EXPECT_NEAR(schedule->lr(t), expected_lr(o, t), 1e-15 * o.lr) << "t = " << t;
    EXPECT_NEAR(schedule->multiplier(t), expected_lr(o, t) / o.lr, 1e-15) << "t = " << t;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Schedules, ScheduleFormula,
    ::testing::Values(
        ScheduleCase{"constant", make_options(ScheduleName::kConstant, 1e-3, 0, 0, 0, 0)},
        ScheduleCase{"constant_warmup", make_options(ScheduleName::kConstant, 1e-3, 0, 10, 0, 0)},
        ScheduleCase{"linear", make_options(ScheduleName::kLinear, 3e-4, 1e-5, 10, 0, 100)},
        ScheduleCase{"linear_start_factor",
                     make_options(ScheduleName::kLinear, 3e-4, 0, 8, 0.1, 50)},
        ScheduleCase{"cosine", make_options(ScheduleName::kCosine, 6e-4, 6e-5, 20, 0, 200)},
        ScheduleCase{"cosine_no_warmup", make_options(ScheduleName::kCosine, 1e-3, 0, 0, 0, 64)},
        ScheduleCase{"inverse_sqrt", make_options(ScheduleName::kInverseSqrt, 5e-4, 0, 16, 0, 0)},
        ScheduleCase{"inverse_sqrt_floor",
                     make_options(ScheduleName::kInverseSqrt, 5e-4, 2e-4, 16, 0.5, 0)}),
    [](const auto& info) { return info.param.name; });

// Anchor values that follow from the definitions by hand, so a formula slip shared by the
// test's expected_lr and the implementation would still be caught.
TEST(Schedule, HandComputedAnchors) {
  const auto linear = make_schedule(make_options(ScheduleName::kLinear, 1.0, 0.0, 10, 0, 110));
  EXPECT_DOUBLE_EQ(linear->lr(0), 0.0);
  EXPECT_DOUBLE_EQ(linear->lr(1), 0.1);  // first update: lr / W, never 0
  EXPECT_DOUBLE_EQ(linear->lr(5), 0.5);
  EXPECT_DOUBLE_EQ(linear->lr(10), 1.0);   // peak at the end of warm-up
  EXPECT_DOUBLE_EQ(linear->lr(60), 0.5);   // half-way through the decay
  EXPECT_DOUBLE_EQ(linear->lr(110), 0.0);  // min_lr at total_steps
  EXPECT_DOUBLE_EQ(linear->lr(500), 0.0);  // and after

  const auto cosine = make_schedule(make_options(ScheduleName::kCosine, 1.0, 0.1, 0, 0, 100));
  EXPECT_DOUBLE_EQ(cosine->lr(0), 1.0);
  EXPECT_NEAR(cosine->lr(50), 0.55, 1e-15);  // (lr + min_lr) / 2 at mid-decay
  EXPECT_NEAR(cosine->lr(25), 0.1 + 0.9 * (1 + std::sqrt(0.5)) / 2, 1e-15);
  EXPECT_DOUBLE_EQ(cosine->lr(100), 0.1);
  EXPECT_DOUBLE_EQ(cosine->lr(1000), 0.1);

  const auto rsqrt = make_schedule(make_options(ScheduleName::kInverseSqrt, 1.0, 0, 4, 0, 0));
  EXPECT_DOUBLE_EQ(rsqrt->lr(2), 0.5);
  EXPECT_DOUBLE_EQ(rsqrt->lr(4), 1.0);
  EXPECT_DOUBLE_EQ(rsqrt->lr(16), 0.5);  // sqrt(4 / 16)
  EXPECT_DOUBLE_EQ(rsqrt->lr(400), 0.1);

  const auto warm = make_schedule(make_options(ScheduleName::kConstant, 2.0, 0, 4, 0.25, 0));
  EXPECT_DOUBLE_EQ(warm->lr(0), 0.5);  // lr * start factor
  EXPECT_DOUBLE_EQ(warm->lr(2), 2.0 * (0.25 + 0.75 * 0.5));
  EXPECT_DOUBLE_EQ(warm->lr(4), 2.0);
  EXPECT_DOUBLE_EQ(warm->lr(1000000), 2.0);
}

TEST(Schedule, NamesRoundTrip) {
  for (ScheduleName name : {ScheduleName::kConstant, ScheduleName::kLinear, ScheduleName::kCosine,
                            ScheduleName::kInverseSqrt}) {
    EXPECT_EQ(parse_schedule_name(schedule_name_str(name)), name);
  }
  EXPECT_STREQ(schedule_name_str(ScheduleName::kInverseSqrt), "inverse_sqrt");
  EXPECT_FALSE(parse_schedule_name("cosine_annealing").has_value());
}

TEST(Schedule, RejectsInvalidOptions) {
  EXPECT_THROW(make_schedule(make_options(ScheduleName::kLinear, 1e-3, 0, 10, 0, 10)), Error);
  EXPECT_THROW(make_schedule(make_options(ScheduleName::kCosine, 1e-3, 0, 0, 0, 0)), Error);
  EXPECT_THROW(make_schedule(make_options(ScheduleName::kCosine, 1e-3, 2e-3, 0, 0, 10)), Error);
  EXPECT_THROW(make_schedule(make_options(ScheduleName::kInverseSqrt, 1e-3, 0, 0, 0, 0)), Error);
  EXPECT_THROW(make_schedule(make_options(ScheduleName::kConstant, -1, 0, 0, 0, 0)), Error);
  EXPECT_THROW(make_schedule(make_options(ScheduleName::kConstant, 1, 0, -1, 0, 0)), Error);
  EXPECT_THROW(make_schedule(make_options(ScheduleName::kConstant, 1, 0, 2, 1.5, 0)), Error);
  const auto s = make_schedule(make_options(ScheduleName::kConstant, 1, 0, 0, 0, 0));
  EXPECT_THROW(s->lr(-1), Error);
}

TEST(Schedule, DrivesOptimizerGroupsThroughSetLr) {
  const ScheduleOptions o = make_options(ScheduleName::kCosine, 0.1, 0.0, 3, 0, 10);
  const auto schedule = make_schedule(o);
  Variable w(zeros({2}, DType::kF64), true), b(zeros({1}, DType::kF64), true);
  ParamGroup main;
  main.params = {w};
  ParamGroup slow;
  slow.params = {b};
  slow.lr_multiplier = 0.1;
  SGD opt({main, slow}, SgdOptions{});
  for (int64_t t = 1; t <= 12; ++t) {
    opt.set_lr(schedule->lr(t));
    EXPECT_DOUBLE_EQ(opt.param_groups()[0].lr, expected_lr(o, t));
    EXPECT_DOUBLE_EQ(opt.param_groups()[1].lr, 0.1 * expected_lr(o, t));
    // A unit gradient moves each parameter by exactly its group's lr.
    const double w_before = w.data().at({0}), b_before = b.data().at({0});
    w.set_grad(ones({2}, DType::kF64));
    b.set_grad(ones({1}, DType::kF64));
    opt.step();
    EXPECT_NEAR(w_before - w.data().at({0}), expected_lr(o, t), 1e-15);
    EXPECT_NEAR(b_before - b.data().at({0}), 0.1 * expected_lr(o, t), 1e-16);
  }
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::optim
