// Exit code of an exception (see exit_codes.h).
#include "app/run/exit_codes.h"

#include "recipes/recipe_error.h"

namespace rota::app {

int exit_code_of(const std::exception& error) {
  return dynamic_cast<const recipes::RecipeError*>(&error) != nullptr ? kExitUsage : kExitFailure;
}

}  // namespace rota::app
