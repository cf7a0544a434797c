// Translating train.dtype and --dtype into the matmul precision (see precision_setup.h).
#include "app/setup/precision_setup.h"

#include "framework/io/log.h"
#include "recipes/recipe_error.h"

namespace rota::app {

namespace {

void log_precision_warning(const std::string& message) {
  io::log_warn("{}", message);
}

}  // namespace

MatmulPrecision precision_from_recipe(const recipes::Recipe& recipe) {
  return recipe.train().dtype() == recipes::Train::BF16 ? MatmulPrecision::kBF16
                                                        : MatmulPrecision::kF32;
}

MatmulPrecision parse_precision(const std::string& flag, const std::string& value) {
  if (value == "f32") return MatmulPrecision::kF32;
  if (value == "bf16") return MatmulPrecision::kBF16;
  throw recipes::RecipeError(flag + ": unknown dtype '" + value + "' (expected f32 or bf16)");
}

void report_precision(MatmulPrecision precision) {
  set_precision_warning_handler(&log_precision_warning);
  if (precision != MatmulPrecision::kBF16) return;
  io::log_info("precision: bf16 matrix products ({}), f32 weights, gradients and optimizer state",
               bf16_matmul_native() ? "oneDNN bf16 kernels" : "portable path, f32 kernels");
}

}  // namespace rota::app
