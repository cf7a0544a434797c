// `rota ablate ABLATION [--out DIR] [--jobs N] [--eval-batches N] [--from-csv FILE]
// [--shard K/N] [--records PATH]... [--start-over]`.
#include <memory>

#include "cli/commands/command_checks.h"
#include "cli/commands/commands.h"
#include "experiments/ablate_run.h"

namespace rota::cli {

Command add_ablate_command(CLI::App& app) {
  auto request = std::make_shared<experiments::AblateRequest>();
  CLI::App* cmd = app.add_subcommand(
      "ablate",
      "Run every variant x seed of an ablation file, then results.csv, results.md and plots "
      "(rerun to resume)");
  cmd->add_option("ablation", request->ablation, "Ablation file (.txtpb)")->required();
  cmd->add_option("--out", request->out,
                  "Output directory (default: runs/ablations/<ablation name>)");
  cmd->add_option("--jobs", request->jobs, "Runs at once (default 1)")->check(positive_number());
  cmd->add_option("--eval-batches", request->eval_batches,
                  "Evaluate only this many batches per split (0: whole splits; a quick look)")
      ->check(non_negative_number());
  CLI::Option* from_csv =
      cmd->add_option("--from-csv", request->from_csv,
                      "Run nothing: rebuild results.md, results.csv and the plots in the output "
                      "directory from this results.csv (e.g. a committed report)")
          ->check(CLI::ExistingFile);
  CLI::Option* shard =
      cmd->add_option("--shard", request->shard,
                      "Run only share K of N of the plan (run i goes to shard i mod N + 1); the "
                      "others come from records or are left");
  CLI::Option* records =
      cmd->add_option("--records", request->records,
                      "Record files, or directories of them (e.g. another OUT/records), of runs "
                      "made elsewhere: a planned run they answer is not run again (repeatable)")
          ->check(CLI::ExistingPath);
  CLI::Option* start_over =
      cmd->add_flag("--start-over", request->start_over,
                    "Delete the output directory's runs and records made with another recipe "
                    "than the plan's instead of refusing to start");
  // --from-csv runs nothing: the options that choose what to run mean nothing with it.
  from_csv->excludes(shard)->excludes(records)->excludes(start_over);
  add_override_options(*cmd, request->overrides, "every run's recipe (after the ablation's)");
  return {cmd, [request] { return experiments::run_ablate(*request); }};
}

}  // namespace rota::cli
