// Recipe `schedule` section and run length → schedule options (see schedule_setup.h).
#include "app/setup/schedule_setup.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "framework/base/error.h"
#include "recipes/recipe_error.h"

namespace rota::app {

int64_t total_steps_from_recipe(const recipes::Recipe& recipe, int64_t steps_per_epoch) {
  if (recipe.train().has_steps()) return recipe.train().steps();
  const double epochs = recipe.train().epochs();
  const double steps = epochs * static_cast<double>(steps_per_epoch);
  // Every integer up to 2^53 is exact in a double: beyond it the count would be rounded (and
  // llround overflows past 2^63), so such a run length is refused, naming the field.
  constexpr double kMaxSteps = 9007199254740992.0;  // 2^53
  if (!(steps <= kMaxSteps)) {
    throw recipes::RecipeError(fmt::format(
        "train.epochs: {:.6g} epochs × {} steps per epoch = {:.3g} steps, more than a run can "
        "take ({:.3g}); lower train.epochs or give train.steps",
        epochs, steps_per_epoch, steps, kMaxSteps));
  }
  return std::max<int64_t>(1, std::llround(steps));
}

optim::ScheduleOptions schedule_options_from_recipe(const recipes::Recipe& recipe,
                                                    int64_t total_steps) {
  const recipes::Schedule& s = recipe.schedule();
  optim::ScheduleOptions o;
  switch (s.kind()) {
    case recipes::Schedule::CONSTANT:
      o.name = optim::ScheduleName::kConstant;
      break;
    case recipes::Schedule::LINEAR:
      o.name = optim::ScheduleName::kLinear;
      break;
    case recipes::Schedule::COSINE:
      o.name = optim::ScheduleName::kCosine;
      break;
    case recipes::Schedule::INVERSE_SQRT:
      o.name = optim::ScheduleName::kInverseSqrt;
      break;
  }
  o.lr = s.lr();
  o.min_lr = s.kind() == recipes::Schedule::CONSTANT ? 0.0 : s.min_lr();
  o.warmup_steps = s.warmup_steps();
  o.warmup_start_factor = s.warmup_start_factor();
  o.total_steps = total_steps;
  ROTA_CHECK(o.warmup_steps < total_steps,
             "schedule.warmup_steps: {} warm-up steps do not fit in a run of {} steps",
             o.warmup_steps, total_steps);
  return o;
}

}  // namespace rota::app
