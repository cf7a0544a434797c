// `rota generate CHECKPOINT (--prompt TEXT | --prompts FILE) [--tokens N] [--temperature T]
// [--top-k K] [--top-p P] [--repetition-penalty R] [--stop TEXT]... [--stop-at-eos] [--samples N]
// [--format text|jsonl] [--seed S]`.
#include <cmath>
#include <memory>

#include <fmt/format.h>

#include "app/run/generate_run.h"
#include "cli/commands/command_checks.h"
#include "cli/commands/commands.h"
#include "recipes/recipe_error.h"

namespace rota::cli {
namespace {

// 0 < P <= 1 ("--top-p: must be in (0, 1], got 0").
CLI::Validator probability_above_zero() {
  return CLI::Validator(
      [](std::string& input) -> std::string {
        char* end = nullptr;
        const double value = std::strtod(input.c_str(), &end);
        if (input.empty() || end != input.c_str() + input.size()) return "";  // not a number
        if (!(value > 0 && value <= 1)) return fmt::format("must be in (0, 1], got {}", input);
        return "";
      },
      "0 < NUMBER <= 1");
}

// A finite number > 0 ("--repetition-penalty: must be a finite number > 0, got inf").
CLI::Validator finite_positive_number() {
  return CLI::Validator(
      [](std::string& input) -> std::string {
        char* end = nullptr;
        const double value = std::strtod(input.c_str(), &end);
        if (input.empty() || end != input.c_str() + input.size()) return "";  // not a number
        if (!(std::isfinite(value) && value > 0)) {
          return fmt::format("must be a finite number > 0, got {}", input);
        }
        return "";
      },
      "FINITE > 0");
}

}  // namespace

Command add_generate_command(CLI::App& app) {
  auto request = std::make_shared<app::GenerateRequest>();
  CLI::App* cmd = app.add_subcommand("generate", "Sample text from a causal LM checkpoint");
  cmd->add_option("checkpoint", request->checkpoint, "Run directory or checkpoint directory")
      ->required();
  CLI::Option* prompt = cmd->add_option("--prompt", request->prompt, "Text to continue");
  CLI::Option* prompts =
      cmd->add_option("--prompts", request->prompts_file,
                      "A file of prompts, one per line (UTF-8), decoded together in batches");
  prompt->excludes(prompts);
  cmd->add_option("--tokens", request->tokens, "Tokens to generate (default 200)")
      ->check(non_negative_number());
  cmd->add_option("--temperature", request->temperature,
                  "Softmax temperature; 0 = greedy (default 0.8)")
      ->check(finite_non_negative_number());
  cmd->add_option("--top-k", request->top_k, "Sample from the k most likely tokens; 0 = all")
      ->check(non_negative_number());
  cmd->add_option("--top-p", request->top_p,
                  "Nucleus sampling: the most likely tokens whose probability reaches P; 1 = off")
      ->check(probability_above_zero());
  cmd->add_option("--repetition-penalty", request->repetition_penalty,
                  "Divide (logit > 0) or multiply (logit <= 0) the logits of tokens already in "
                  "the text by R; 1 = off")
      ->check(finite_positive_number());
  cmd->add_option("--stop", request->stops,
                  "End a continuation where this text appears, cut before it (repeatable)")
      ->allow_extra_args(false);
  cmd->add_flag("--stop-at-eos", request->stop_at_eos,
                "End a continuation at the tokenizer's <eos> (refused when it has none)");
  cmd->add_option("--samples", request->samples, "Continuations per prompt (default 1)")
      ->check(positive_number());
  cmd->add_option("--format", request->format,
                  "text (default) or jsonl: one JSON record per prompt and sample")
      ->check(CLI::IsMember({"text", "jsonl"}));
  cmd->add_option("--seed", request->seed,
                  "Sampling seed (default 0); sample i > 0 of a prompt uses a seed derived from it")
      ->check(non_negative_number());
  return {cmd, [request, prompt, prompts] {
            if (prompt->count() == 0 && prompts->count() == 0) {
              throw recipes::RecipeError(
                  "rota generate: give a prompt: --prompt TEXT or --prompts FILE (one per line)");
            }
            return app::run_generation(*request);
          }};
}

}  // namespace rota::cli
