// `rota ablate` (see ablate_run.h).
#include "experiments/ablate_run.h"

#include <cstdio>

#include "app/run/exit_codes.h"
#include "experiments/ablation_runner.h"
#include "experiments/run_plan.h"
#include "experiments/subprocess.h"
#include "framework/io/log.h"
#include "recipes/overrides.h"

namespace rota::experiments {

namespace {

/// The command as typed (for results.md): only the options that differ from the defaults.
std::string ablate_command_line(const AblateRequest& args) {
  std::vector<std::string> argv = {"rota", "ablate", args.ablation};
  if (!args.out.empty()) argv.insert(argv.end(), {"--out", args.out});
  if (args.jobs != 1) argv.insert(argv.end(), {"--jobs", std::to_string(args.jobs)});
  if (args.eval_batches > 0) {
    argv.insert(argv.end(), {"--eval-batches", std::to_string(args.eval_batches)});
  }
  if (!args.from_csv.empty()) argv.insert(argv.end(), {"--from-csv", args.from_csv});
  if (!args.shard.empty()) argv.insert(argv.end(), {"--shard", args.shard});
  for (const std::string& records : args.records) {
    argv.insert(argv.end(), {"--records", records});
  }
  if (args.start_over) argv.push_back("--start-over");
  for (const std::string& override_text : args.overrides) {
    if (!override_text.empty() && override_text.front() == recipes::kUnsetMark) {
      argv.insert(argv.end(), {"--unset", override_text.substr(1)});
    } else {
      argv.insert(argv.end(), {"--set", override_text});
    }
  }
  return command_line(argv);
}

}  // namespace

int run_ablate(const AblateRequest& args) {
  io::init_logging_from_env();
  AblationRunOptions options;
  options.ablation_file = args.ablation;
  options.out = args.out;
  options.jobs = args.jobs;
  options.eval_batches = args.eval_batches;
  // /proc/self/exe names this very binary even if the file is rebuilt during the ablation.
  options.program = args.rota_binary.empty() ? "/proc/self/exe" : args.rota_binary;
  options.command = ablate_command_line(args);
  options.from_csv = args.from_csv;
  options.overrides = args.overrides;
  if (!args.shard.empty()) options.shard = parse_shard(args.shard);
  options.records.assign(args.records.begin(), args.records.end());
  options.start_over = args.start_over;
  const AblationOutcome outcome = run_ablation(options);
  const std::filesystem::path report = outcome.out / "results.md";
  const std::string elsewhere =
      outcome.other_shards > 0
          ? ", " + std::to_string(outcome.other_shards) + " left to other shards"
          : "";
  std::printf("ablation: %d of %zu runs finished, %d failed, %d unfinished%s; results=%s\n",
              outcome.finished, outcome.results.size(), outcome.failed, outcome.unfinished,
              elsewhere.c_str(), report.c_str());
  if (outcome.stopped) {
    std::printf("stopped; rerun the same command to continue: %s\n", options.command.c_str());
  }
  return outcome.failed == 0 && outcome.unfinished == 0 ? app::kExitOk : app::kExitFailure;
}

}  // namespace rota::experiments
