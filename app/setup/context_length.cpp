// Evaluating at another sequence length (see context_length.h): change the recipe, re-validate.
#include "app/setup/context_length.h"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "recipes/recipe_error.h"
#include "recipes/validate.h"

namespace rota::app {

namespace {

/// One problem of the changed recipe, explained for someone asking for `context` tokens.
std::string explain(const recipes::Recipe& trained, int64_t context, const recipes::Issue& issue) {
  const recipes::Position& position = trained.model().position();
  const int64_t trained_length = trained.data().sequence_length();
  if (issue.path.rfind("model.position.learned_absolute", 0) == 0) {
    const int64_t rows = position.learned_absolute().max_positions();
    return fmt::format(
        "--context {}: learned absolute positions cannot extrapolate: the model's position table "
        "has {} rows (model.position.learned_absolute.max_positions = {}), so it cannot be "
        "evaluated past {} tokens (trained at {})",
        context, rows, rows, rows, trained_length);
  }
  if (issue.path.rfind("model.position.skew", 0) == 0) {
    const int64_t max_len = position.skew().max_len();
    return fmt::format(
        "--context {}: the skew's learned relative table covers distances up to {} "
        "(model.position.skew.max_len = {}), so the model cannot be evaluated past {} tokens "
        "(trained at {})",
        context, max_len - 1, max_len, max_len, trained_length);
  }
  return fmt::format("--context {}: the model cannot run at this length: {}: {}", context,
                     issue.path, issue.message);
}

}  // namespace

recipes::Recipe recipe_at_context(const recipes::Recipe& trained, int64_t context) {
  if (context < 1 || context > std::numeric_limits<int32_t>::max()) {
    throw recipes::RecipeError(fmt::format("--context {}: must be in [1, {}]", context,
                                           std::numeric_limits<int32_t>::max()));
  }
  recipes::Recipe changed = trained;
  const int64_t trained_length = trained.data().sequence_length();
  const int64_t accumulation = std::max<int64_t>(1, trained.train().gradient_accumulation());
  const int64_t micro_batch = std::max<int64_t>(1, trained.data().batch_size() / accumulation);
  const int64_t batch = std::max<int64_t>(1, micro_batch * trained_length / context);
  changed.mutable_data()->set_sequence_length(static_cast<int32_t>(context));
  changed.mutable_data()->set_batch_size(static_cast<int32_t>(batch));
  changed.mutable_train()->set_gradient_accumulation(1);
  const std::vector<recipes::Issue> issues = recipes::validate_recipe(changed);
  if (!issues.empty()) {
    std::string report;
    for (const recipes::Issue& issue : issues) {
      if (!report.empty()) report += "\n";
      report += explain(trained, context, issue);
    }
    throw recipes::RecipeError(report);
  }
  return changed;
}

std::string context_problem(const recipes::Recipe& trained, int64_t context) {
  try {
    recipe_at_context(trained, context);
    return "";
  } catch (const recipes::RecipeError& error) {
    return error.what();
  }
}

}  // namespace rota::app
