// Fuzzes the recipe reader: text -> parse, upgrade, resolve, validate (recipes::load_recipe_text).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "recipes/loader.h"
#include "recipes/recipe_error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const rota::recipes::Recipe recipe = rota::recipes::load_recipe_text(text, "fuzz.txtpb");
    // A recipe that loads prints to text that loads back to the same recipe.
    const std::string printed = rota::recipes::format_recipe(recipe);
    const rota::recipes::Recipe again = rota::recipes::load_recipe_text(printed, "fuzz.txtpb");
    if (again.SerializeAsString() != recipe.SerializeAsString()) __builtin_trap();
  } catch (const rota::recipes::RecipeError&) {
    // The expected outcome for a bad recipe.
  }
  return 0;
}
