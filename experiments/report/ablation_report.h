// Everything the ablation's reports are made from: the plan, its runs, their results, the plots.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "experiments/run_plan.h"
#include "experiments/run_result.h"
#include "recipes/ablation.h"

namespace rota::experiments {

/// A plot written into the output directory (file names relative to it).
struct PlotFile {
  std::string title;
  std::string svg;
  std::string png;  // empty: no PNG
};

struct AblationReport {
  const recipes::AblationPlan* plan = nullptr;
  std::vector<PlannedRun> runs;
  std::vector<RunResult> results;  // one per run, same order
  std::string command;             // the rota ablate command line
  std::filesystem::path out;
  int jobs = 1;
  int64_t eval_batches = 0;
  std::vector<PlotFile> plots;
  std::string png_note;      // how PNG copies were made, or why not
  std::string generated_at;  // UTC time of the report
  std::string source_note;   // where the results came from when not from the runs (--from-csv)
  std::string shard_note;    // which runs this shard holds (--shard K/N); empty: the whole plan
};

/// The finished (status ok) results of one variant, in seed order.
std::vector<const RunResult*> finished_results(const AblationReport& report, int variant_index);

/// The split the stage's final evaluation used: "test", or "valid" where the data has no
/// labelled test split (the first finished run's; "test" when none finished).
std::string evaluated_split(const AblationReport& report, int stage);
/// Whether some stage's final evaluation used the validation split, which also picked
/// checkpoints/best (so its numbers carry a selection bias).
bool evaluates_on_validation(const AblationReport& report);
/// The text with its first letter upper-case.
std::string capitalised(std::string text);

/// Column prefix of a stage in the CSV and headings: "" for the first, "finetune_" after.
std::string stage_prefix(int stage);
/// Human name of a stage's metric: "valid ppl", "fine-tune test accuracy", ...
std::string stage_metric_title(const AblationReport& report, int stage, const std::string& what,
                               const std::string& metric);

/// results.csv: one row per run (see docs/ablations.md for the columns).
std::string results_csv(const AblationReport& report);
/// The results of `runs` read back from a results.csv that results_csv wrote (matched by
/// variant and seed; a planned run the file lacks is "not run", with an error saying so). The
/// file holds no validation curves: StageResult::curve stays empty. Throws rota::Error for a
/// malformed file, a missing column or a number that does not parse, naming the row.
std::vector<RunResult> results_from_csv(const std::string& text,
                                        const std::vector<PlannedRun>& runs);
/// results.md: description, command, variants, mean ± std per variant (best first),
/// extrapolation table, plots, failures.
std::string results_markdown(const AblationReport& report);

}  // namespace rota::experiments
