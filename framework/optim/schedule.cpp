// Learning-rate schedule formulas (warm-up shared by all, decay per schedule) and the factory.
#include "framework/optim/schedule.h"

#include <algorithm>
#include <cmath>

#include "framework/base/error.h"

namespace rota::optim {

namespace {

constexpr double kPi = 3.14159265358979323846;

/// Fraction of the decay phase done at step t: (t - W) / (T - W), clamped to [0, 1].
double decay_progress(const ScheduleOptions& o, int64_t t) {
  const double progress =
      static_cast<double>(t - o.warmup_steps) / static_cast<double>(o.total_steps - o.warmup_steps);
  return std::clamp(progress, 0.0, 1.0);
}

void check_decay_horizon(const ScheduleOptions& o) {
  ROTA_CHECK(o.total_steps > o.warmup_steps,
             "{} schedule: total_steps ({}) must exceed warmup_steps ({})",
             schedule_name_str(o.name), o.total_steps, o.warmup_steps);
  ROTA_CHECK(o.min_lr <= o.lr, "{} schedule: min_lr {} is above lr {}", schedule_name_str(o.name),
             o.min_lr, o.lr);
}

/// The options with `name` set to the schedule class actually built (for messages, options()).
ScheduleOptions named(ScheduleOptions options, ScheduleName name) {
  options.name = name;
  return options;
}

}  // namespace

const char* schedule_name_str(ScheduleName name) {
  switch (name) {
    case ScheduleName::kConstant:
      return "constant";
    case ScheduleName::kLinear:
      return "linear";
    case ScheduleName::kCosine:
      return "cosine";
    case ScheduleName::kInverseSqrt:
      return "inverse_sqrt";
  }
  return "unknown";
}

std::optional<ScheduleName> parse_schedule_name(std::string_view text) {
  for (ScheduleName name : {ScheduleName::kConstant, ScheduleName::kLinear, ScheduleName::kCosine,
                            ScheduleName::kInverseSqrt}) {
    if (text == schedule_name_str(name)) return name;
  }
  return std::nullopt;
}

LrSchedule::LrSchedule(const ScheduleOptions& options) : options_(options) {
  const char* name = schedule_name_str(options.name);
  ROTA_CHECK(std::isfinite(options.lr) && options.lr >= 0.0, "{} schedule: lr {} < 0", name,
             options.lr);
  ROTA_CHECK(std::isfinite(options.min_lr) && options.min_lr >= 0.0, "{} schedule: min_lr {} < 0",
             name, options.min_lr);
  ROTA_CHECK(options.warmup_steps >= 0, "{} schedule: warmup_steps {} < 0", name,
             options.warmup_steps);
  ROTA_CHECK(options.warmup_start_factor >= 0.0 && options.warmup_start_factor <= 1.0,
             "{} schedule: warmup_start_factor {} is outside [0, 1]", name,
             options.warmup_start_factor);
}

double LrSchedule::lr(int64_t t) const {
  ROTA_CHECK(t >= 0, "{} schedule: step {} < 0", schedule_name_str(options_.name), t);
  if (t <= options_.warmup_steps && options_.warmup_steps > 0) {
    const double s = options_.warmup_start_factor;
    const double fraction = static_cast<double>(t) / static_cast<double>(options_.warmup_steps);
    return options_.lr * (s + (1.0 - s) * fraction);
  }
  return after_warmup(t);
}

double LrSchedule::multiplier(int64_t t) const {
  return options_.lr > 0.0 ? lr(t) / options_.lr : 0.0;
}

template <ScheduleName kName>
NamedSchedule<kName>::NamedSchedule(const ScheduleOptions& options)
    : LrSchedule(named(options, kName)) {
  if constexpr (kName == ScheduleName::kLinear || kName == ScheduleName::kCosine) {
    check_decay_horizon(options_);
  } else if constexpr (kName == ScheduleName::kInverseSqrt) {
    ROTA_CHECK(options_.warmup_steps >= 1,
               "inverse_sqrt schedule: warmup_steps must be >= 1 (the decay is lr * sqrt(W / t))");
  }
}

template <ScheduleName kName>
double NamedSchedule<kName>::after_warmup(int64_t t) const {
  if constexpr (kName == ScheduleName::kConstant) {
    return options_.lr;
  } else if constexpr (kName == ScheduleName::kLinear) {
    return options_.lr + (options_.min_lr - options_.lr) * decay_progress(options_, t);
  } else if constexpr (kName == ScheduleName::kCosine) {
    const double p = decay_progress(options_, t);
    return options_.min_lr + (options_.lr - options_.min_lr) * 0.5 * (1.0 + std::cos(kPi * p));
  } else {
    static_assert(kName == ScheduleName::kInverseSqrt);
    const double decayed = options_.lr * std::sqrt(static_cast<double>(options_.warmup_steps)) /
                           std::sqrt(static_cast<double>(t));
    return std::max(options_.min_lr, decayed);
  }
}

template class NamedSchedule<ScheduleName::kConstant>;
template class NamedSchedule<ScheduleName::kLinear>;
template class NamedSchedule<ScheduleName::kCosine>;
template class NamedSchedule<ScheduleName::kInverseSqrt>;

std::unique_ptr<LrSchedule> make_schedule(const ScheduleOptions& options) {
  switch (options.name) {
    case ScheduleName::kConstant:
      return std::make_unique<ConstantSchedule>(options);
    case ScheduleName::kLinear:
      return std::make_unique<LinearDecaySchedule>(options);
    case ScheduleName::kCosine:
      return std::make_unique<CosineDecaySchedule>(options);
    case ScheduleName::kInverseSqrt:
      return std::make_unique<InverseSqrtSchedule>(options);
  }
  fail("make_schedule: unknown schedule name {}", static_cast<int>(options.name));
}

}  // namespace rota::optim
