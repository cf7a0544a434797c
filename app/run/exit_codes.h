// The exit codes of every `rota` command: 0 success, 1 runtime failure, 2 usage or recipe error.
#pragma once

#include <exception>

namespace rota::app {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

/// kExitUsage for a recipes::RecipeError (a mistake in the recipe or the command line),
/// kExitFailure for everything else.
int exit_code_of(const std::exception& error);

}  // namespace rota::app
