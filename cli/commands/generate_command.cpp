// `rota generate CHECKPOINT --prompt TEXT [--tokens N] [--temperature T] [--top-k K] [--seed S]`.
#include <cstdio>

#include "cli/commands/commands.h"
#include "cli/jobs/checkpoint_task.h"
#include "cli/jobs/precision_setup.h"
#include "cli/jobs/tasks.h"
#include "framework/io/log.h"
#include "models/generation.h"
#include "recipes/recipe_error.h"

namespace rota::cli {

int run_generate(const GenerateArgs& args) {
  io::init_logging_from_env();
  if (args.tokens < 0) throw recipes::RecipeError("--tokens must be >= 0");
  if (args.temperature < 0) throw recipes::RecipeError("--temperature must be >= 0");
  if (args.top_k < 0) throw recipes::RecipeError("--top-k must be >= 0");
  CheckpointTask loaded = load_checkpoint_task(args.checkpoint);
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
  std::vector<int64_t> prompt = tokenizer.encode(args.prompt);
  // Line-based tokenizers close every line with <eos>; the prompt is a line still being written.
  const auto& specials = tokenizer.specials();
  if (prompt.size() > 1 && specials.has(data::SpecialToken::kEos) &&
      prompt.back() == specials.id(data::SpecialToken::kEos)) {
    prompt.pop_back();
  }
  if (prompt.empty()) throw recipes::RecipeError("--prompt: the prompt encodes to no tokens");
  models::GenerationOptions options;
  options.tokens = args.tokens;
  options.temperature = args.temperature;
  options.top_k = args.top_k;
  options.seed = args.seed;
  std::fputs(tokenizer.decode(prompt).c_str(), stdout);
  // Stream the text: decode each new id as it arrives.
  models::generate(causal->causal_lm(), prompt, options, [&](int64_t id) {
    const int64_t one[1] = {id};
    std::fputs(tokenizer.decode(one).c_str(), stdout);
    std::fflush(stdout);
  });
  std::fputs("\n", stdout);
  return kExitOk;
}

}  // namespace rota::cli
