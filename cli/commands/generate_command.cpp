// `rota generate CHECKPOINT --prompt TEXT [--tokens N] [--temperature T] [--top-k K] [--seed S]`.
#include <memory>

#include "app/run/generate_run.h"
#include "cli/commands/command_checks.h"
#include "cli/commands/commands.h"

namespace rota::cli {

Command add_generate_command(CLI::App& app) {
  auto request = std::make_shared<app::GenerateRequest>();
  CLI::App* cmd = app.add_subcommand("generate", "Sample text from a causal LM checkpoint");
  cmd->add_option("checkpoint", request->checkpoint, "Run directory or checkpoint directory")
      ->required();
  cmd->add_option("--prompt", request->prompt, "Text to continue")->required();
  cmd->add_option("--tokens", request->tokens, "Tokens to generate (default 200)")
      ->check(non_negative_number());
  cmd->add_option("--temperature", request->temperature,
                  "Softmax temperature; 0 = greedy (default 0.8)")
      ->check(finite_non_negative_number());
  cmd->add_option("--top-k", request->top_k, "Sample from the k most likely tokens; 0 = all")
      ->check(non_negative_number());
  cmd->add_option("--seed", request->seed, "Sampling seed (default 0)")
      ->check(non_negative_number());
  return {cmd, [request] { return app::run_generation(*request); }};
}

}  // namespace rota::cli
