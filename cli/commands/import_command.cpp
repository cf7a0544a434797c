// `rota import hf DIR --out RUN`: a Hugging Face checkpoint as a Rota run.
#include <memory>

#include "app/run/hf_import.h"
#include "cli/commands/command_checks.h"
#include "cli/commands/commands.h"

namespace rota::cli {

std::vector<Command> add_import_commands(CLI::App& app) {
  CLI::App* group = app.add_subcommand("import", "Import models from other formats");
  group->require_subcommand(1);
  struct Request {
    std::string source;
    std::string out;
    std::vector<std::string> overrides;
  };
  auto request = std::make_shared<Request>();
  CLI::App* hf = group->add_subcommand(
      "hf",
      "Read a Hugging Face GPT-2 or Llama-family checkpoint (config.json, model.safetensors or "
      "its shards, tokenizer.json) into a Rota run that eval, generate, predict, export hf and "
      "finetune.init_from use");
  hf->add_option("source", request->source, "The Hugging Face model directory")->required();
  hf->add_option("--out", request->out, "The run directory to write (new, or empty)")->required();
  add_override_options(*hf, request->overrides, "the recipe the import writes");
  return {{hf, [request] {
             app::HfImportRequest r;
             r.source = request->source;
             r.out = request->out;
             r.overrides = request->overrides;
             return app::run_hf_import(r);
           }}};
}

}  // namespace rota::cli
