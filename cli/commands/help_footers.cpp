// The last lines of every --help page: one example command and the doc that explains it.
#include <string>

#include <fmt/format.h>

#include "cli/commands/commands.h"

namespace rota::cli {

namespace {

struct HelpFooter {
  const char* path;     // the command's words after `rota` ("" for rota itself)
  const char* example;  // a command as a user would type it
  const char* doc;      // the doc to read, relative to the source tree
};

// One per command; tests/cli/help_footers_cli_test.cpp checks every command has one, that its
// options exist and that the doc does.
constexpr HelpFooter kFooters[] = {
    {"", "rota train recipes/default.txtpb", "README.md"},
    {"train", "rota train recipes/default.txtpb --out runs/mine --set train.steps=500",
     "docs/training.md"},
    {"eval", "rota eval runs/default --split valid --batches 20", "docs/training.md"},
    {"predict", "rota predict runs/reviews --input unlabelled.csv --output predictions.jsonl",
     "docs/data.md"},
    {"generate", "rota generate runs/default --prompt \"ROMEO:\" --tokens 200 --top-p 0.9",
     "docs/training.md"},
    {"ablate", "rota ablate recipes/ablations/encodings_causal.txtpb --jobs 2",
     "docs/ablations.md"},
    {"bench", "rota bench train recipes/bench/bench_small.txtpb", "docs/performance.md"},
    {"bench train", "rota bench train recipes/bench/bench_small.txtpb --dtype bf16",
     "docs/performance.md"},
    {"data", "rota data list", "docs/data.md"},
    {"data list", "rota data list", "docs/data.md"},
    {"data fetch", "rota data fetch wikitext-2", "docs/data.md"},
    {"data prepare",
     "rota data prepare recipes/causal_lm/wikitext2_lrpe_type2.txtpb --out prepared/wikitext-2",
     "docs/data.md"},
    {"data verify", "rota data verify prepared/wikitext-2", "docs/data.md"},
    {"recipe", "rota recipe show recipes/default.txtpb", "docs/recipes.md"},
    {"recipe show", "rota recipe show recipes/default.txtpb --set model.layers=6",
     "docs/recipes.md"},
    {"recipe diff", "rota recipe diff recipes/default.txtpb runs/default", "docs/recipes.md"},
    {"export", "rota export hf runs/default exported/default", "docs/python.md"},
    {"export hf", "rota export hf runs/default exported/default", "docs/python.md"},
    {"import", "rota import hf ~/models/gpt2 --out runs/gpt2", "docs/pretrained.md"},
    {"import hf", "rota import hf ~/models/gpt2 --out runs/gpt2", "docs/pretrained.md"},
};

/// The subcommand a path of words names under `app`, or nullptr.
CLI::App* find_command(CLI::App& app, const std::string& path) {
  CLI::App* current = &app;
  size_t start = 0;
  while (current != nullptr && start < path.size()) {
    const size_t end = std::min(path.find(' ', start), path.size());
    try {
      current = current->get_subcommand(path.substr(start, end - start));
    } catch (const CLI::OptionNotFound&) {
      current = nullptr;
    }
    start = end + 1;
  }
  return current;
}

}  // namespace

void add_help_footers(CLI::App& app) {
  for (const HelpFooter& footer : kFooters) {
    if (CLI::App* command = find_command(app, footer.path)) {
      command->footer(fmt::format("\nExample:\n  {}\nMore: {} (in the source tree)", footer.example,
                                  footer.doc));
    }
  }
}

}  // namespace rota::cli
