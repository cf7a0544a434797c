// `rota ablate` from start to end (see ablation_runner.h): lock, run the jobs, write the reports.
#include "experiments/ablation_runner.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <ctime>
#include <mutex>

#include <fmt/chrono.h>
#include <fmt/format.h>

#include "experiments/job_pool.h"
#include "experiments/report/ablation_plots.h"
#include "experiments/report/ablation_report.h"
#include "experiments/report/png_export.h"
#include "experiments/run_plan.h"
#include "experiments/run_unit.h"
#include "framework/base/directory_lock.h"
#include "framework/base/error.h"
#include "framework/base/file_io.h"
#include "framework/io/log.h"
#include "framework/train/stop_signal.h"
#include "recipes/ablation.h"
#include "recipes/loader.h"

namespace fs = std::filesystem;

namespace rota::experiments {

namespace {

int available_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  const long online = ::sysconf(_SC_NPROCESSORS_ONLN);
  return online > 0 ? static_cast<int>(online) : 1;
}

std::string utc_now() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  return fmt::format("{:%Y-%m-%d %H:%M} UTC", fmt::gmtime(now));
}

/// "done: test ppl 123.4 (2/2 stages)" for the progress log.
std::string summary_line(const RunResult& result) {
  if (result.status != RunResult::Status::kOk) {
    return fmt::format("{}: {}", status_name(result.status), result.error);
  }
  const StageResult& last = result.stages.back();
  std::string text = result.reused ? "already done" : "done";
  const auto it = last.test.find(last.primary);
  if (it != last.test.end()) {
    text += fmt::format(", {} {} {:.5g}", last.test_split, last.primary, it->second);
  }
  return text;
}

}  // namespace

AblationOutcome run_ablation(const AblationRunOptions& options) {
  const recipes::AblationPlan plan = recipes::load_ablation(options.ablation_file);
  AblationOutcome outcome;
  outcome.out = options.out.empty() ? default_ablation_out(plan) : options.out;
  fs::create_directories(outcome.out);
  // OUT/.lock for the whole ablation, so two rota ablate never write the same runs; each child
  // rota train also locks its own run directory.
  const DirectoryLock lock(outcome.out, "wait for it to finish or stop it, or use another --out");
  // Log lines also go to OUT/ablate.log until the end of the ablation.
  const io::LogFileScope log_file(outcome.out / "ablate.log");
  write_file_atomically(outcome.out / "ablation.txtpb",
                        recipes::read_text_file(options.ablation_file));

  const std::vector<PlannedRun> runs = plan_runs(plan, outcome.out);
  const int jobs = std::max(1, options.jobs);
  const int threads_per_run = std::max(1, available_cores() / jobs);
  UnitSettings settings;
  settings.program = options.program;
  settings.program_name = options.program_name;
  // Info-level logs from the children: console.log is for reading later.
  settings.env = {{"OMP_NUM_THREADS", std::to_string(threads_per_run)}, {"ROTA_LOG_LEVEL", "info"}};
  settings.eval_batches = options.eval_batches;
  settings.context_multipliers.assign(plan.ablation.context_multipliers().begin(),
                                      plan.ablation.context_multipliers().end());
  settings.stop_signal = &train::StopSignalGuard::requested;
  io::log_info(
      "rota ablate {}: {} variants x {} seeds = {} runs in {}, {} at once ({} threads each)",
      plan.ablation.name(), plan.ablation.variant_size(), plan.ablation.seeds_size(), runs.size(),
      outcome.out.string(), jobs, threads_per_run);

  outcome.results.resize(runs.size());
  for (size_t i = 0; i < runs.size(); ++i) {
    outcome.results[i].variant = runs[i].variant;
    outcome.results[i].seed = runs[i].seed;
    const recipes::Variant& variant = plan.ablation.variant(runs[i].variant_index);
    outcome.results[i].overrides.assign(variant.overrides().begin(), variant.overrides().end());
  }
  {
    const train::StopSignalGuard signals;
    std::atomic<int> completed{0};
    run_jobs(
        runs.size(), jobs,
        [&](size_t i) {
          const recipes::Variant& variant = plan.ablation.variant(runs[i].variant_index);
          RunResult result =
              run_unit(runs[i], {variant.overrides().begin(), variant.overrides().end()}, settings);
          io::log_info("[{}/{}] {} seed {}: {}", ++completed, runs.size(), runs[i].variant,
                       runs[i].seed, summary_line(result));
          outcome.results[i] = std::move(result);
        },
        [] { return train::StopSignalGuard::requested() != 0; });
    outcome.stopped = train::StopSignalGuard::requested() != 0;
  }
  for (const RunResult& r : outcome.results) {
    outcome.finished += r.status == RunResult::Status::kOk;
    outcome.failed += r.status == RunResult::Status::kFailed;
    outcome.unfinished +=
        r.status == RunResult::Status::kInterrupted || r.status == RunResult::Status::kNotRun;
  }

  AblationReport report;
  report.plan = &plan;
  report.runs = runs;
  report.results = outcome.results;
  report.command = options.command;
  report.out = outcome.out;
  report.jobs = jobs;
  report.eval_batches = options.eval_batches;
  report.generated_at = utc_now();
  report.plots = write_plots(report);
  report.png_note = export_pngs(outcome.out, report.plots, outcome.out / "ablate.log");
  write_file_atomically(outcome.out / "results.csv", results_csv(report));
  write_file_atomically(outcome.out / "results.md", results_markdown(report));
  io::log_info("rota ablate {}: {} of {} runs finished ({} failed, {} unfinished); report: {}",
               plan.ablation.name(), outcome.finished, runs.size(), outcome.failed,
               outcome.unfinished, (outcome.out / "results.md").string());
  return outcome;
}

}  // namespace rota::experiments
