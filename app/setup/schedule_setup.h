// Translating a recipe's `schedule` section and the run's length (train.steps or train.epochs).
#pragma once

#include <cstdint>

#include "framework/optim/schedule.h"
#include "recipes/recipe.pb.h"

namespace rota::app {

/// Optimizer steps of the run: train.steps, or round(train.epochs × steps_per_epoch) (at
/// least 1).
int64_t total_steps_from_recipe(const recipes::Recipe& recipe, int64_t steps_per_epoch);

/// recipe.schedule for a run of total_steps; throws rota::Error when warm-up does not fit.
optim::ScheduleOptions schedule_options_from_recipe(const recipes::Recipe& recipe,
                                                    int64_t total_steps);

}  // namespace rota::app
