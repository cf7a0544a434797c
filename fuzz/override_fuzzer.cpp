// Fuzzes `--set` overrides: a valid recipe loaded with the input's lines as overrides.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_support.h"
#include "recipes/loader.h"
#include "recipes/recipe_error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // One override per line, as repeated `--set` options would give them.
  const std::string_view input = rota::fuzz::as_text(data, size);
  std::vector<std::string> overrides;
  size_t start = 0;
  while (start <= input.size() && overrides.size() < 16) {
    size_t end = input.find('\n', start);
    if (end == std::string_view::npos) end = input.size();
    overrides.emplace_back(input.substr(start, end - start));
    start = end + 1;
  }
  try {
    rota::recipes::load_recipe_text(rota::fuzz::kSmallRecipe, "base.txtpb", overrides);
  } catch (const rota::recipes::RecipeError&) {
    // The expected outcome for a bad override.
  }
  return 0;
}
