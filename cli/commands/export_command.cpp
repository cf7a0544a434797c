// `rota export hf RUN OUT`: a checkpoint as a Hugging Face-style directory for rota.torch.
#include <memory>

#include "app/run/hf_export.h"
#include "cli/commands/commands.h"

namespace rota::cli {

std::vector<Command> add_export_commands(CLI::App& app) {
  CLI::App* group = app.add_subcommand("export", "Export a run to other formats");
  group->require_subcommand(1);
  struct Request {
    std::string run;
    std::string out;
  };
  auto request = std::make_shared<Request>();
  CLI::App* hf = group->add_subcommand(
      "hf",
      "Write config.json, model.safetensors, tokenizer.json and the rota.torch modeling code "
      "into OUT (loads with rota.torch.from_pretrained(OUT))");
  hf->add_option("run", request->run, "Run directory or checkpoint directory")->required();
  hf->add_option("out", request->out, "Output directory (must not exist, or be empty)")->required();
  return {{hf, [request] { return app::run_hf_export(request->run, request->out); }}};
}

}  // namespace rota::cli
