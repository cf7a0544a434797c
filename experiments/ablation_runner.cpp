// `rota ablate` from start to end (see ablation_runner.h): lock, run the jobs, write the reports.
#include "experiments/ablation_runner.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <ctime>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include <fmt/chrono.h>
#include <fmt/format.h>

#include "experiments/host_facts.h"
#include "experiments/job_pool.h"
#include "experiments/progress.h"
#include "experiments/report/ablation_plots.h"
#include "experiments/report/ablation_report.h"
#include "experiments/report/png_export.h"
#include "experiments/run_plan.h"
#include "experiments/run_record.h"
#include "experiments/run_unit.h"
#include "framework/base/directory_lock.h"
#include "framework/base/error.h"
#include "framework/base/file_io.h"
#include "framework/io/checkpoint_paths.h"
#include "framework/io/log.h"
#include "framework/train/stop_signal.h"
#include "recipes/ablation.h"
#include "recipes/loader.h"
#include "recipes/recipe_error.h"

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

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// The runs in flight and the times of those done, shared by the workers and the monitor.
class ProgressBoard {
 public:
  /// `total`: how many runs this rota ablate starts (records and other shards excluded).
  ProgressBoard(const std::vector<PlannedRun>& runs, int jobs, size_t total)
      : runs_(runs), jobs_(jobs), total_(total) {}

  void started(size_t run) {
    const std::lock_guard lock(mutex_);
    running_[run] = Clock::now();
  }
  /// Records a finished run; returns its wall time.
  double finished(size_t run, bool reused) {
    const std::lock_guard lock(mutex_);
    const double seconds = seconds_since(running_.at(run));
    running_.erase(run);
    ++done_;
    if (!reused) finished_seconds_.push_back(seconds);
    return seconds;
  }

  /// "ETA 12 min (about 10:42 UTC)" or "ETA: after the first progress is logged".
  std::string eta() {
    const std::lock_guard lock(mutex_);
    EtaInput input;
    input.total = total_;
    input.done = done_;
    input.finished_seconds = finished_seconds_;
    input.jobs = jobs_;
    for (const auto& [run, start] : running_) {
      input.running.emplace_back(seconds_since(start), fraction_done(run));
    }
    const std::optional<double> left = eta_seconds(input);
    const std::string counts =
        fmt::format("{} of {} runs done, {} running", done_, total_, running_.size());
    if (!left) return counts + "; ETA once a run has made progress";
    const auto at = std::chrono::system_clock::now() +
                    std::chrono::seconds(static_cast<int64_t>(std::llround(*left)));
    return fmt::format("{}; ETA {} (about {:%H:%M} UTC)", counts, format_duration(*left),
                       fmt::gmtime(std::chrono::system_clock::to_time_t(at)));
  }

  /// One line per running run: its stage, step and time so far.
  std::vector<std::string> running_lines() {
    const std::lock_guard lock(mutex_);
    std::vector<std::string> lines;
    for (const auto& [run, start] : running_) {
      const PlannedRun& planned = runs_[run];
      std::string where = "starting";
      for (size_t k = planned.stages.size(); k-- > 0;) {
        const StagePlan& stage = planned.stages[k];
        const int64_t step = last_logged_step(stage.run_dir);
        if (step == 0 && k > 0) continue;
        const int64_t steps = stage.recipe.train().steps();
        where = fmt::format("stage {}/{} step {}", k + 1, planned.stages.size(), step);
        if (steps > 0) {
          where += fmt::format("/{} ({:.0f}%)", steps, 100.0 * static_cast<double>(step) / steps);
        }
        break;
      }
      lines.push_back(fmt::format("{} seed {}: {}, running for {}", planned.variant, planned.seed,
                                  where, format_duration(seconds_since(start))));
    }
    return lines;
  }

 private:
  /// Training progress of a run over its stages from metrics.jsonl (evaluations count as the
  /// last 5%).
  double fraction_done(size_t run) const {
    const PlannedRun& planned = runs_[run];
    double done = 0;
    for (const StagePlan& stage : planned.stages) {
      const int64_t steps = stage.recipe.train().steps();
      if (steps <= 0) continue;
      done += std::min(1.0, static_cast<double>(last_logged_step(stage.run_dir)) / steps);
    }
    return 0.95 * done / static_cast<double>(planned.stages.size());
  }

  const std::vector<PlannedRun>& runs_;
  const int jobs_;
  const size_t total_;
  std::mutex mutex_;
  std::map<size_t, Clock::time_point> running_;
  std::vector<double> finished_seconds_;
  size_t done_ = 0;
};

/// Logs the running runs' progress and the ETA every `seconds` until destroyed.
class ProgressMonitor {
 public:
  ProgressMonitor(ProgressBoard& board, double seconds) : board_(board) {
    if (!(seconds > 0)) return;
    thread_ = std::thread([this, seconds] {
      std::unique_lock lock(mutex_);
      const auto period = std::chrono::duration<double>(seconds);
      while (!cv_.wait_for(lock, period, [this] { return stop_; })) {
        lock.unlock();
        for (const std::string& line : board_.running_lines()) {
          io::log_info("progress: {}", line);
        }
        io::log_info("progress: {}", board_.eta());
        lock.lock();
      }
    });
  }
  ~ProgressMonitor() {
    {
      const std::lock_guard lock(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  ProgressMonitor(const ProgressMonitor&) = delete;
  ProgressMonitor& operator=(const ProgressMonitor&) = delete;

 private:
  ProgressBoard& board_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

/// results.csv, results.md, the plots and their PNGs from `report` (its plan, runs, results).
void write_reports(AblationReport& report) {
  report.generated_at = utc_time_text();
  report.plots = write_plots(report);
  report.png_note = export_pngs(report.out, report.plots, report.out / "ablate.log");
  write_file_atomically(report.out / "results.csv", results_csv(report));
  write_file_atomically(report.out / "results.md", results_markdown(report));
}

/// Counts the outcome's statuses from its results.
void count_statuses(AblationOutcome& outcome) {
  for (const RunResult& r : outcome.results) {
    outcome.finished += r.status == RunResult::Status::kOk;
    outcome.failed += r.status == RunResult::Status::kFailed;
    outcome.unfinished +=
        r.status == RunResult::Status::kInterrupted || r.status == RunResult::Status::kNotRun;
    outcome.other_shards += r.status == RunResult::Status::kOtherShard;
  }
}

/// A planned run that OUT already holds with another recipe: what differs and what to delete.
struct Conflict {
  std::string what;  // "nope seed 1 (runs/nope/seed1): model.width: 32 -> 64; ..."
  std::vector<fs::path> paths;
};

/// Runs and records in OUT made with another recipe than the plan's (see run_ablation).
std::vector<Conflict> find_conflicts(const std::vector<PlannedRun>& runs,
                                     const std::vector<RunRecord>& own_records,
                                     const fs::path& out) {
  std::vector<Conflict> conflicts;
  for (const PlannedRun& run : runs) {
    std::vector<std::string> differences;
    std::vector<fs::path> paths;
    for (const RunRecord& record : own_records) {
      if (record.result.variant != run.variant || record.result.seed != run.seed) continue;
      for (size_t i = 0; i < run.stages.size(); ++i) {
        const std::string planned = comparable_recipe_text(run.stages[i]);
        const std::string recorded =
            i < record.stage_recipes.size() ? record.stage_recipes[i] : std::string();
        if (recorded == planned) continue;
        for (const std::string& field : recipe_differences(recorded, planned)) {
          differences.push_back(fmt::format("stage {} {}", i + 1, field));
        }
        if (record.stage_recipes.size() != run.stages.size()) {
          differences.push_back(fmt::format("{} stages recorded, {} planned",
                                            record.stage_recipes.size(), run.stages.size()));
        }
        paths.push_back(record.file);
        break;
      }
    }
    for (const StagePlan& stage : run.stages) {
      const fs::path recorded_file = stage.run_dir / "recipe.txtpb";
      if (!fs::exists(recorded_file) || !io::find_latest(stage.run_dir)) continue;
      const std::string recorded = read_file(recorded_file);
      if (recorded == stage.recipe_text) continue;
      if (paths.empty() || std::find(paths.begin(), paths.end(), run.dir) == paths.end()) {
        for (const std::string& field : recipe_differences(recorded, stage.recipe_text)) {
          differences.push_back(fmt::format("stage {} {}", stage.index + 1, field));
        }
      }
      paths.push_back(run.dir);
      break;
    }
    if (paths.empty()) continue;
    std::sort(differences.begin(), differences.end());
    differences.erase(std::unique(differences.begin(), differences.end()), differences.end());
    std::string listed;
    for (const std::string& d : differences) listed += (listed.empty() ? "" : "; ") + d;
    conflicts.push_back(
        {fmt::format("{} seed {} ({}): {}", run.variant, run.seed,
                     fs::relative(run.dir, fs::weakly_canonical(fs::absolute(out))).string(),
                     listed.empty() ? "the recipe differs" : listed),
         paths});
  }
  return conflicts;
}

/// "recorded -> planned" conflicts as the error users read.
std::string conflicts_message(const std::vector<Conflict>& conflicts, const fs::path& out) {
  std::string text = fmt::format(
      "{} holds {} run(s) made with a different recipe than this ablation now plans; its "
      "results and report are kept, nothing was started:\n",
      out.string(), conflicts.size());
  constexpr size_t kShown = 10;
  for (size_t i = 0; i < conflicts.size() && i < kShown; ++i) {
    text += "  " + conflicts[i].what + "\n";
  }
  if (conflicts.size() > kShown) {
    text += fmt::format("  … and {} more\n", conflicts.size() - kShown);
  }
  text +=
      "Use another --out for the new plan, undo the change (a --set, an edit of the ablation "
      "or its recipe), or pass --start-over to delete those runs and their records and train "
      "them anew";
  return text;
}

/// "shard 2/4: runs 2, 6, 10 of 12 (variant seed, …)" for the report.
std::string shard_note(const std::vector<PlannedRun>& runs, const Shard& shard) {
  std::string held;
  size_t count = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    if (!shard.holds(i)) continue;
    held += fmt::format("{}{} seed {}", held.empty() ? "" : ", ", runs[i].variant, runs[i].seed);
    ++count;
  }
  return fmt::format(
      "shard {} of {} (`--shard {}/{}`): it runs {} of the {} planned runs ({}); the others "
      "come from records or are left to the other shards. Merge the shards with `rota ablate "
      "FILE --records DIR …` over their records/ directories",
      shard.index, shard.count, shard.index, shard.count, count, runs.size(),
      held.empty() ? "none" : held);
}

/// --from-csv: the reports rebuilt from a results.csv; nothing runs.
AblationOutcome rebuild_from_csv(const AblationRunOptions& options,
                                 const recipes::AblationPlan& plan,
                                 const std::vector<PlannedRun>& runs, AblationOutcome& outcome) {
  const io::LogFileScope log_file(outcome.out / "ablate.log");
  // Read the CSV before anything in OUT is rewritten.
  AblationReport report;
  report.plan = &plan;
  report.runs = runs;
  report.results = results_from_csv(read_file(options.from_csv), runs);
  report.command = options.command;
  report.out = outcome.out;
  report.source_note = fmt::format(
      "the per-run results were read from {} (not from run directories); that file holds no "
      "validation curves, so there is no validation-curve plot",
      options.from_csv.string());
  write_file_atomically(outcome.out / "ablation.txtpb",
                        recipes::read_text_file(options.ablation_file));
  write_reports(report);
  outcome.results = report.results;
  count_statuses(outcome);
  io::log_info("rota ablate {}: reports rebuilt from {}: {}", plan.ablation.name(),
               options.from_csv.string(), (outcome.out / "results.md").string());
  return outcome;
}

}  // namespace

AblationOutcome run_ablation(const AblationRunOptions& options) {
  const recipes::AblationPlan plan =
      recipes::load_ablation(options.ablation_file, options.overrides);
  AblationOutcome outcome;
  outcome.out = options.out.empty() ? default_ablation_out(plan) : options.out;
  fs::create_directories(outcome.out);
  // OUT/.lock for the whole ablation, so two rota ablate never write the same runs; each child
  // rota train also locks its own run directory.
  const DirectoryLock lock(outcome.out, "wait for it to finish or stop it, or use another --out");
  const std::vector<PlannedRun> runs = plan_runs(plan, outcome.out);
  if (!options.from_csv.empty()) return rebuild_from_csv(options, plan, runs, outcome);

  const std::vector<int> multipliers(plan.ablation.context_multipliers().begin(),
                                     plan.ablation.context_multipliers().end());
  // Records: this directory's own (left by earlier runs here), then those named.
  const fs::path own_records_dir = outcome.out / kRecordsDir;
  std::vector<RunRecord> own_records =
      fs::exists(own_records_dir) ? read_records({own_records_dir}) : std::vector<RunRecord>{};
  const std::vector<RunRecord> imported = read_records(options.records);

  // Nothing of an earlier study is overwritten by a different plan: refuse before writing.
  const std::vector<Conflict> conflicts = find_conflicts(runs, own_records, outcome.out);
  if (!conflicts.empty() && !options.start_over) {
    // A choice for the user to make (another --out, or --start-over): a usage error, exit 2.
    throw recipes::RecipeError(conflicts_message(conflicts, outcome.out));
  }
  // Log lines also go to OUT/ablate.log until the end of the ablation.
  const io::LogFileScope log_file(outcome.out / "ablate.log");
  for (const Conflict& conflict : conflicts) {
    io::log_info("--start-over: deleting {}", conflict.what);
    for (const fs::path& path : conflict.paths) fs::remove_all(path);
  }
  if (!conflicts.empty()) {
    own_records = read_records({own_records_dir});
  }
  write_file_atomically(outcome.out / "ablation.txtpb",
                        recipes::read_text_file(options.ablation_file));

  const int jobs = std::max(1, options.jobs);
  const int threads_per_run = std::max(1, available_cores() / jobs);
  UnitSettings settings;
  settings.program = options.program;
  settings.program_name = options.program_name;
  // Info-level logs from the children: console.log is for reading later.
  settings.env = {{"OMP_NUM_THREADS", std::to_string(threads_per_run)}, {"ROTA_LOG_LEVEL", "info"}};
  settings.eval_batches = options.eval_batches;
  settings.context_multipliers = multipliers;
  settings.stop_signal = &train::StopSignalGuard::requested;
  settings.records_out = outcome.out;
  settings.cpu = cpu_model_name();

  // Every planned run a record answers is taken from it; the shard's others are run.
  outcome.results.resize(runs.size());
  std::vector<size_t> to_run;
  int imported_count = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    RunResult& result = outcome.results[i];
    result.variant = runs[i].variant;
    result.seed = runs[i].seed;
    const recipes::Variant& variant = plan.ablation.variant(runs[i].variant_index);
    result.overrides.assign(variant.overrides().begin(), variant.overrides().end());
    const auto answers = [&](const RunRecord& record) {
      return record_answers(record, runs[i], options.eval_batches, multipliers);
    };
    const RunRecord* record = nullptr;
    bool own = true;
    for (const RunRecord& r : own_records) {
      if (!record && answers(r)) record = &r;
    }
    for (const RunRecord& r : imported) {
      if (!record && answers(r)) {
        record = &r;
        own = false;
      }
    }
    if (record != nullptr) {
      const std::vector<std::string> overrides = result.overrides;
      result = record->result;
      result.overrides = overrides;
      result.reused = true;
      ++outcome.from_records;
      if (!own) {
        // OUT keeps a copy, so it holds every result its report was made from.
        const fs::path copy = record_path(outcome.out, runs[i].variant, runs[i].seed);
        fs::create_directories(copy.parent_path());
        write_file_atomically(copy, record_to_json(*record));
        result.record_file = copy;
        ++imported_count;
      }
    } else if (options.shard.holds(i)) {
      to_run.push_back(i);
    } else {
      result.status = RunResult::Status::kOtherShard;
      result.error = fmt::format("shard {}/{} runs it; no record of it yet", options.shard.of(i),
                                 options.shard.count);
    }
  }
  if (!to_run.empty()) {
    settings.rota_version =
        program_version(settings.program, settings.program_name, outcome.out.string());
  }
  io::log_info(
      "rota ablate {}: {} variants x {} seeds = {} runs in {}{}: {} from records ({} imported), "
      "{} to run, {} at once ({} threads each)",
      plan.ablation.name(), plan.ablation.variant_size(), plan.ablation.seeds_size(), runs.size(),
      outcome.out.string(),
      options.shard.whole()
          ? ""
          : fmt::format(" (shard {}/{})", options.shard.index, options.shard.count),
      outcome.from_records, imported_count, to_run.size(), jobs, threads_per_run);

  {
    const train::StopSignalGuard signals;
    std::atomic<int> completed{0};
    ProgressBoard board(runs, jobs, to_run.size());
    const ProgressMonitor monitor(board, options.progress_seconds);
    run_jobs(
        to_run.size(), jobs,
        [&](size_t k) {
          const size_t i = to_run[k];
          const recipes::Variant& variant = plan.ablation.variant(runs[i].variant_index);
          board.started(i);
          io::log_info("start {} seed {} (run {} of {})", runs[i].variant, runs[i].seed, k + 1,
                       to_run.size());
          RunResult result =
              run_unit(runs[i], {variant.overrides().begin(), variant.overrides().end()}, settings);
          const double seconds = board.finished(i, result.reused);
          io::log_info("[{}/{}] {} seed {}: {} ({}); {}", ++completed, to_run.size(),
                       runs[i].variant, runs[i].seed, summary_line(result),
                       format_duration(seconds), board.eta());
          outcome.results[i] = std::move(result);
        },
        [] { return train::StopSignalGuard::requested() != 0; });
    outcome.stopped = train::StopSignalGuard::requested() != 0;
  }
  count_statuses(outcome);

  AblationReport report;
  report.plan = &plan;
  report.runs = runs;
  report.results = outcome.results;
  report.command = options.command;
  report.out = outcome.out;
  report.jobs = jobs;
  report.eval_batches = options.eval_batches;
  if (!options.shard.whole()) report.shard_note = shard_note(runs, options.shard);
  write_reports(report);
  io::log_info(
      "rota ablate {}: {} of {} runs finished ({} from records, {} failed, {} unfinished{}); "
      "report: {}",
      plan.ablation.name(), outcome.finished, runs.size(), outcome.from_records, outcome.failed,
      outcome.unfinished,
      outcome.other_shards > 0 ? fmt::format(", {} left to other shards", outcome.other_shards)
                               : "",
      (outcome.out / "results.md").string());
  return outcome;
}

}  // namespace rota::experiments
