// `rota generate` (see generate_run.h).
#include "app/run/generate_run.h"

#include <cmath>
#include <cstdio>

#include "app/run/exit_codes.h"
#include "app/run/prompt.h"
#include "app/run/text_stream.h"
#include "app/setup/precision_setup.h"
#include "app/tasks/causal_lm_task.h"
#include "app/tasks/checkpoint_task.h"
#include "framework/io/log.h"
#include "models/generation.h"
#include "recipes/recipe_error.h"

namespace rota::app {

int run_generation(const GenerateRequest& request) {
  io::init_logging_from_env();
  if (request.tokens < 0) throw recipes::RecipeError("--tokens must be >= 0");
  if (!(std::isfinite(request.temperature) && request.temperature >= 0)) {
    throw recipes::RecipeError("--temperature must be a finite number >= 0");
  }
  if (request.top_k < 0) throw recipes::RecipeError("--top-k must be >= 0");
  CheckpointTask loaded = load_checkpoint_task(request.checkpoint);
  auto* causal = dynamic_cast<CausalLmTask*>(loaded.task.get());
  if (!causal) {
    throw recipes::RecipeError(
        "rota generate: " + loaded.checkpoint_dir.string() +
        " is not a causal language model (generation needs model.kind CAUSAL_LM)");
  }
  // The precision the model was trained in (train.dtype).
  const MatmulPrecisionGuard precision(precision_from_recipe(causal->recipe()));
  report_precision(matmul_precision());
  const data::Tokenizer& tokenizer = causal->tokenizer();
  const std::vector<int64_t> prompt = encode_prompt(tokenizer, request.prompt);
  if (prompt.empty()) throw recipes::RecipeError("--prompt: the prompt encodes to no tokens");
  models::GenerationOptions options;
  options.tokens = request.tokens;
  options.temperature = request.temperature;
  options.top_k = request.top_k;
  options.seed = request.seed;
  // Stream the text as it is generated, as one decode of the whole sequence would print it.
  TextStream stream(tokenizer, prompt);
  std::fputs(stream.start().c_str(), stdout);
  models::generate(causal->causal_lm(), prompt, options, [&](int64_t id) {
    std::fputs(stream.push(id).c_str(), stdout);
    std::fflush(stdout);
  });
  std::fputs(stream.finish().c_str(), stdout);
  std::fputs("\n", stdout);
  return kExitOk;
}

}  // namespace rota::app
