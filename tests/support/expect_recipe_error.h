// Assertion that a call is refused with a recipes::RecipeError (the run's options, not a bug)
// whose message contains a fragment. Header-only: for test targets that link the recipes layer.
#pragma once

#include <functional>
#include <string>

#include <gtest/gtest.h>

#include "recipes/recipe_error.h"

namespace rota::testing {

/// Adds a test failure unless call() throws recipes::RecipeError with `fragment` in its message.
inline void expect_recipe_error(const std::function<void()>& call, const std::string& fragment) {
  try {
    call();
    ADD_FAILURE() << "expected a RecipeError naming: " << fragment;
  } catch (const recipes::RecipeError& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

}  // namespace rota::testing
