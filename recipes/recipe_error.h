// RecipeError: a bad recipe, ablation or override (the CLI maps it to exit code 2).
#pragma once

#include <stdexcept>
#include <string>

namespace rota::recipes {

/// Every problem with a recipe the user can fix: syntax errors, unknown fields, bad overrides,
/// failed validation. what() holds one line per problem, each naming where it is
/// (`file:line:col`, or the `--set` text) and the field path.
class RecipeError : public std::runtime_error {
 public:
  /// The process exit code for a usage or recipe error (the architecture note's CLI contract).
  static constexpr int kExitCode = 2;

  explicit RecipeError(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace rota::recipes
