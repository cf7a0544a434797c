// results.md of an ablation: what was run, per-variant mean ± std best first, extrapolation, plots.
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>

#include <fmt/format.h>

#include "experiments/report/ablation_report.h"
#include "experiments/report/paired_stats.h"
#include "experiments/report/summary_stats.h"
#include "experiments/report/text_table.h"

namespace rota::experiments {

namespace {

using StageValue = std::function<double(const StageResult&)>;

std::string code(const std::string& text) {
  return "`" + text + "`";
}

std::string code_list(const std::vector<std::string>& items) {
  std::string text;
  for (const std::string& item : items) text += (text.empty() ? "" : ", ") + code(item);
  return text.empty() ? "none" : text;
}

double metric_value_or_nan(const MetricMap& metrics, const std::string& name) {
  const auto it = metrics.find(name);
  return it == metrics.end() ? NAN : it->second;
}

/// A value of stage `stage` of every finished run of a variant.
Summary variant_summary(const AblationReport& report, int variant, int stage,
                        const StageValue& value) {
  std::vector<double> values;
  for (const RunResult* r : finished_results(report, variant)) {
    if (static_cast<size_t>(stage) < r->stages.size()) values.push_back(value(r->stages[stage]));
  }
  return summarize(values);
}

/// How a run's first stage starts: its `model.init_scheme` (with σ where the scheme has one),
/// or the checkpoint `finetune.init_from` loads (the scheme then starts only what it lacks).
std::string initialisation_text(const recipes::Recipe& recipe) {
  const recipes::Model& model = recipe.model();
  std::string scheme =
      "`model.init_scheme` " + recipes::Model::InitScheme_Name(model.init_scheme());
  if (model.init_scheme() == recipes::Model::NORMAL ||
      model.init_scheme() == recipes::Model::GPT2) {
    scheme += fmt::format(" (σ {:g})", model.init_std());
  }
  if (recipe.has_finetune() && recipe.finetune().has_init_from()) {
    return fmt::format("weights from {} ({} for the parameters it lacks)",
                       code(recipe.finetune().init_from()), scheme);
  }
  return scheme;
}

/// "- Initialisation: ..." — one line for the whole plan when every variant starts alike. Empty
/// for a report rebuilt from a results.csv (--from-csv): its runs may predate a change of the
/// default, and the CSV does not say how they started.
std::string initialisation_line(const AblationReport& report) {
  if (!report.source_note.empty()) return "";
  std::vector<std::pair<std::string, std::string>> per_variant;  // plan order
  for (const PlannedRun& run : report.runs) {
    if (run.stages.empty()) continue;
    const bool seen = std::any_of(per_variant.begin(), per_variant.end(),
                                  [&](const auto& entry) { return entry.first == run.variant; });
    if (!seen) per_variant.emplace_back(run.variant, initialisation_text(run.stages[0].recipe));
  }
  if (per_variant.empty()) return "";
  const bool alike = std::all_of(per_variant.begin(), per_variant.end(), [&](const auto& entry) {
    return entry.second == per_variant.front().second;
  });
  std::string text;
  if (alike) {
    text = ": " + per_variant.front().second + ", in every variant";
  } else {
    for (const auto& [variant, init] : per_variant) {
      text += (text.empty() ? "" : "; ") + variant + ": " + init;
    }
    text = " per variant — " + text;
  }
  return "- Initialisation" + text + "\n";
}

void add_how_it_was_run(const AblationReport& report, std::string& md) {
  const recipes::AblationPlan& plan = *report.plan;
  md += "## How it was run\n\n```sh\n" + report.command + "\n```\n\n";
  md += fmt::format("- Ablation file: {} (a copy: [ablation.txtpb](ablation.txtpb))\n",
                    code(plan.file.string()));
  md +=
      fmt::format("- Base recipe: {}; overrides applied to every variant: {}\n",
                  code(plan.base_recipe.string()),
                  code_list({plan.ablation.overrides().begin(), plan.ablation.overrides().end()}));
  if (plan.ablation.has_follow_up()) {
    const auto& follow_up = plan.ablation.follow_up();
    md += fmt::format(
        "- Second stage per run: {} initialised from the first stage's final checkpoint, with "
        "the variant's `model.` overrides and {}\n",
        code(plan.follow_up_recipe.string()),
        code_list({follow_up.overrides().begin(), follow_up.overrides().end()}));
  }
  std::string seeds;
  for (const uint64_t seed : plan.ablation.seeds()) {
    seeds += (seeds.empty() ? "" : ", ") + std::to_string(seed);
  }
  md += fmt::format(
      "- Seeds: {} (`train.seed`); every variant trains with the base recipe's "
      "hyper-parameters, only its own overrides differ\n",
      seeds);
  md += initialisation_line(report);
  md += fmt::format(
      "- Evaluation: each run's `checkpoints/best` (picked on the validation split) on the "
      "test split (the validation split where the test labels are hidden): {}\n",
      report.eval_batches > 0
          ? fmt::format("only its first {} batches (`--eval-batches {}`: a quick look, not a "
                        "whole-split result)",
                        report.eval_batches, report.eval_batches)
          : "the whole split");
  if (evaluates_on_validation(report)) {
    md +=
        "- **Selection bias:** the data has no labelled test split, so the numbers reported "
        "here come from the validation split — the split that also picked each run's "
        "`checkpoints/best`. They are optimistic, and "
        "the more so for variants whose validation curves are noisier; compare variants with "
        "that in mind, and give the data a held-out test split (`data.files.test`) for a "
        "result free of it. The columns of results.csv keep their `test_` names; its "
        "`test_split` column says which split they hold.\n";
  }
  md +=
      "- Per-run numbers: [results.csv](results.csv); run directories: "
      "`runs/<variant>/seed<S>/` (logs in `console.log`, `train.log`, `metrics.jsonl`)\n";
  if (!report.source_note.empty()) md += "- This report was rebuilt: " + report.source_note + "\n";
  if (!report.shard_note.empty()) md += "- This report is " + report.shard_note + "\n";
  md += "\n";
}

void add_variants(const AblationReport& report, std::string& md) {
  TextTable table;
  table.header = {"variant", "description", "overrides"};
  for (const recipes::Variant& v : report.plan->ablation.variant()) {
    table.rows.push_back({v.name(), v.description(),
                          v.overrides().empty()
                              ? "(the base recipe)"
                              : code_list({v.overrides().begin(), v.overrides().end()})});
  }
  md += "## Variants\n\n" + to_markdown(table, 3) + "\n";
}

/// Variant indices, best first by the last stage's test primary metric (variants without a
/// finished run last).
std::vector<int> variants_best_first(const AblationReport& report) {
  const PlannedRun& first = report.runs.front();
  const int last = static_cast<int>(first.stages.size()) - 1;
  const std::string primary = primary_metric(first.stages[last].recipe);
  const bool higher = primary_higher_is_better(first.stages[last].recipe);
  std::vector<std::pair<double, int>> keyed;
  for (int v = 0; v < report.plan->ablation.variant_size(); ++v) {
    const Summary s = variant_summary(report, v, last, [&](const StageResult& stage) {
      return metric_value_or_nan(stage.test, primary);
    });
    const double key = s.n == 0 ? INFINITY : higher ? -s.mean : s.mean;
    keyed.emplace_back(key, v);
  }
  std::stable_sort(keyed.begin(), keyed.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<int> order;
  for (const auto& [key, v] : keyed) order.push_back(v);
  return order;
}

void add_results(const AblationReport& report, std::string& md) {
  const PlannedRun& first = report.runs.front();
  const int last = static_cast<int>(first.stages.size()) - 1;
  const std::string sort_metric = primary_metric(first.stages[last].recipe);
  TextTable table;
  table.header = {"variant", "runs", "parameters", "train time (s)", "tokens/s"};
  struct Column {
    int stage;
    StageValue value;
  };
  std::vector<Column> columns;
  for (const StagePlan& stage : first.stages) {
    const std::string primary = primary_metric(stage.recipe);
    table.header.push_back(stage_metric_title(report, stage.index, "best valid", primary));
    columns.push_back({stage.index, [primary](const StageResult& s) {
                         return metric_value_or_nan(s.best_valid, primary);
                       }});
    std::vector<std::string> shown = {primary};
    if (stage.recipe.model().kind() == recipes::Model::CLASSIFIER) {
      shown = {"accuracy", "mcc"};
    }
    const std::string split = evaluated_split(report, stage.index);
    for (const std::string& metric : shown) {
      table.header.push_back(stage_metric_title(report, stage.index, split, metric));
      columns.push_back({stage.index, [metric](const StageResult& s) {
                           return metric_value_or_nan(s.test, metric);
                         }});
    }
  }
  const int seeds = report.plan->ablation.seeds_size();
  for (const int v : variants_best_first(report)) {
    const int finished = static_cast<int>(finished_results(report, v).size());
    std::vector<std::string> row = {report.plan->ablation.variant(v).name(),
                                    fmt::format("{}/{}", finished, seeds)};
    auto cell = [&](int stage, const StageValue& value) {
      return format_mean_std(variant_summary(report, v, stage, value));
    };
    const Summary parameters = variant_summary(
        report, v, 0, [](const StageResult& s) { return static_cast<double>(s.parameters); });
    row.push_back(parameters.n == 0 ? "—" : fmt::format("{:.0f}", parameters.mean));
    row.push_back(cell(0, [](const StageResult& s) { return s.train_time_s; }));
    row.push_back(cell(0, [](const StageResult& s) { return s.tokens_per_s; }));
    for (const Column& column : columns) row.push_back(cell(column.stage, column.value));
    table.rows.push_back(std::move(row));
  }
  const bool higher = primary_higher_is_better(first.stages[last].recipe);
  md += "## Results\n\n";
  md += fmt::format(
      "Mean ± sample standard deviation over the seeds that finished (one value: a single run). "
      "Sorted by {}, best ({}) first. Parameters, training time and throughput are the {}; "
      "tokens/s is the median over the logged training windows.\n\n",
      stage_metric_title(report, last, evaluated_split(report, last), sort_metric),
      higher ? "highest" : "lowest", first.stages.size() > 1 ? "first stage's" : "run's");
  md += to_markdown(table) + "\n";
}

/// Per seed, a value of every finished run of a variant (NaN where it has none).
std::map<uint64_t, double> values_by_seed(const AblationReport& report, int variant,
                                          const std::function<double(const RunResult&)>& value) {
  std::map<uint64_t, double> by_seed;
  for (const RunResult* r : finished_results(report, variant)) by_seed[r->seed] = value(*r);
  return by_seed;
}

/// Variant − baseline for every seed of the ablation both have a finite value for, in the
/// ablation's seed order; the seeds in `seeds`.
std::vector<double> paired_differences(const AblationReport& report,
                                       const std::map<uint64_t, double>& variant,
                                       const std::map<uint64_t, double>& baseline,
                                       std::vector<uint64_t>* seeds = nullptr) {
  std::vector<double> differences;
  for (const uint64_t seed : report.plan->ablation.seeds()) {
    const auto v = variant.find(seed);
    const auto b = baseline.find(seed);
    if (v == variant.end() || b == baseline.end() || !std::isfinite(v->second) ||
        !std::isfinite(b->second)) {
      continue;
    }
    differences.push_back(v->second - b->second);
    if (seeds != nullptr) seeds->push_back(seed);
  }
  return differences;
}

/// Decimals for differences of a metric whose values are about `scale`: the decimals of the
/// metric itself at 4 significant digits (237.0 → 1; 0.8512 → 4).
int comparison_decimals(double scale) {
  const double magnitude = std::abs(scale);
  if (!std::isfinite(magnitude) || magnitude == 0) return 1;
  return std::clamp(3 - static_cast<int>(std::floor(std::log10(magnitude))), 0, 8);
}

/// The mean of the finite values of a map (NaN when none).
double mean_of(const std::map<uint64_t, double>& values) {
  std::vector<double> list;
  for (const auto& [seed, value] : values) list.push_back(value);
  const Summary s = summarize(list);
  return s.n == 0 ? NAN : s.mean;
}

/// "+1.5", "−0.25" (a real minus sign), "0.0".
std::string signed_number(double value, int decimals) {
  if (!std::isfinite(value)) return "—";
  std::string text = fmt::format("{:.{}f}", std::abs(value), decimals);
  if (text.find_first_not_of("0.") == std::string::npos) return text;  // rounds to zero
  return (value < 0 ? "−" : "+") + text;
}

/// "+20.9 [−6.0, +47.8]"; one pair: the difference alone.
std::string mean_with_interval(const PairedComparison& c, int decimals) {
  if (c.n == 0) return "—";
  if (c.n == 1) return signed_number(c.mean, decimals);
  return fmt::format("{} [{}, {}]", signed_number(c.mean, decimals),
                     signed_number(c.ci_low, decimals), signed_number(c.ci_high, decimals));
}

/// "0.079", "< 0.001".
std::string p_value_text(double p) {
  if (!std::isfinite(p)) return "—";
  if (p < 0.001) return "< 0.001";
  return format_number(p, 2);
}

/// What a comparison says, in words.
std::string verdict(const PairedComparison& c, bool higher_is_better) {
  if (c.n == 0) return "no seed with both results";
  if (c.n == 1) return "one paired seed: no interval";
  if (c.within_noise) return "within noise (the 95% CI contains 0)";
  const bool better = higher_is_better ? c.mean > 0 : c.mean < 0;
  return better ? "**better** (the 95% CI excludes 0)" : "**worse** (the 95% CI excludes 0)";
}

/// results.md's comparison of every variant with its baseline: paired per-seed differences,
/// their mean with a 95% confidence interval, the paired t-test and a verdict.
void add_comparisons(const AblationReport& report, std::string& md) {
  const std::vector<int>& baseline_of = report.plan->baseline_of;
  const int variants = report.plan->ablation.variant_size();
  if (baseline_of.size() != static_cast<size_t>(variants)) {
    md +=
        "## Against the baseline\n\nNo `baseline:` in the ablation file: name one (a variant, or "
        "AXIS=LEVEL) to get paired per-seed differences with confidence intervals.\n\n";
    return;
  }
  const PlannedRun& first = report.runs.front();
  const int last = static_cast<int>(first.stages.size()) - 1;
  const std::string primary = primary_metric(first.stages[last].recipe);
  const bool higher = primary_higher_is_better(first.stages[last].recipe);
  const std::string metric =
      stage_metric_title(report, last, evaluated_split(report, last), primary);
  auto test_value = [&](const RunResult& r) {
    return static_cast<size_t>(last) < r.stages.size()
               ? metric_value_or_nan(r.stages[last].test, primary)
               : NAN;
  };
  std::string seed_list;
  for (const uint64_t seed : report.plan->ablation.seeds()) {
    seed_list += (seed_list.empty() ? "" : ", ") + std::to_string(seed);
  }
  TextTable table;
  table.header = {"variant",
                  "baseline",
                  "verdict",
                  "seeds",
                  "difference per seed (" + seed_list + ")",
                  "mean difference [95% CI]",
                  "p (paired t)"};
  const bool one_baseline = std::all_of(baseline_of.begin(), baseline_of.end(),
                                        [&](int b) { return b == baseline_of[0]; });
  std::vector<std::string> worse, better, noise, unknown;
  for (const int v : variants_best_first(report)) {
    const int b = baseline_of[v];
    if (b == v) continue;
    std::vector<uint64_t> seeds;
    const std::map<uint64_t, double> baseline_values = values_by_seed(report, b, test_value);
    const std::vector<double> differences =
        paired_differences(report, values_by_seed(report, v, test_value), baseline_values, &seeds);
    const PairedComparison c = compare_paired(differences);
    const int decimals = comparison_decimals(mean_of(baseline_values));
    std::string per_seed;
    size_t k = 0;
    for (const uint64_t seed : report.plan->ablation.seeds()) {
      const bool have = k < seeds.size() && seeds[k] == seed;
      per_seed += (per_seed.empty() ? "" : ", ") +
                  (have ? signed_number(differences[k++], decimals) : std::string("—"));
    }
    const std::string name = report.plan->ablation.variant(v).name();
    const std::string baseline = report.plan->ablation.variant(b).name();
    table.rows.push_back({name, baseline, verdict(c, higher), std::to_string(c.n), per_seed,
                          mean_with_interval(c, decimals), p_value_text(c.p_value)});
    const std::string label = one_baseline ? name : name + " (vs " + baseline + ")";
    if (c.n < 2) {
      unknown.push_back(label);
    } else if (c.within_noise) {
      noise.push_back(label);
    } else {
      ((higher ? c.mean > 0 : c.mean < 0) ? better : worse).push_back(label);
    }
  }
  md += "## Against the baseline\n\n";
  md += fmt::format(
      "Each variant against {} on {}, paired by seed (the same seed gives the same data order "
      "and initialisation stream): the difference variant − baseline per seed, their mean with "
      "a 95% confidence interval (Student's t over the seeds, df = seeds − 1) and the two-sided "
      "paired t-test. {} is better, so a {} difference means the variant is worse. A difference "
      "is **within noise** when its interval contains 0.\n\n",
      one_baseline
          ? code(report.plan->ablation.variant(baseline_of[0]).name())
          : fmt::format("its baseline ({}: the variant that differs from it only on that axis)",
                        code(report.plan->ablation.baseline())),
      metric, higher ? "Higher" : "Lower", higher ? "negative" : "positive");
  md += to_markdown(table, 3) + "\n";
  auto names = [](const std::vector<std::string>& items) {
    std::string text;
    for (const std::string& item : items) text += (text.empty() ? "" : ", ") + item;
    return text.empty() ? std::string("none") : text;
  };
  md += fmt::format("- Worse than the baseline (95% CI excludes 0): {}\n", names(worse));
  md += fmt::format("- Better than the baseline (95% CI excludes 0): {}\n", names(better));
  md += fmt::format("- Within noise (95% CI contains 0): {}\n", names(noise));
  if (!unknown.empty()) {
    md += fmt::format("- Fewer than 2 paired seeds, no interval: {}\n", names(unknown));
  }
  md += "\n";
}

/// The extrapolation's differences with the baseline, per multiplier.
void add_extrapolation_comparisons(const AblationReport& report, std::string& md) {
  const std::vector<int>& baseline_of = report.plan->baseline_of;
  const auto& multipliers = report.plan->ablation.context_multipliers();
  if (baseline_of.empty() || multipliers.size() < 2) return;
  const StagePlan& stage = report.runs.front().stages.front();
  TextTable table;
  table.header = {"variant", "baseline"};
  for (const int m : multipliers) table.header.push_back(fmt::format("{}×", m));
  for (const int v : variants_best_first(report)) {
    const int b = baseline_of[v];
    if (b == v) continue;
    std::vector<std::string> row = {report.plan->ablation.variant(v).name(),
                                    report.plan->ablation.variant(b).name()};
    for (const int m : multipliers) {
      auto at_m = [m](const RunResult& r) {
        for (const ContextResult& c : r.stages.front().contexts) {
          if (c.multiplier == m && c.value) return *c.value;
        }
        return static_cast<double>(NAN);
      };
      const std::map<uint64_t, double> baseline_values = values_by_seed(report, b, at_m);
      const PairedComparison c = compare_paired(
          paired_differences(report, values_by_seed(report, v, at_m), baseline_values));
      const std::string cell = mean_with_interval(c, comparison_decimals(mean_of(baseline_values)));
      row.push_back(c.n >= 2 && !c.within_noise ? "**" + cell + "**" : cell);
    }
    table.rows.push_back(std::move(row));
  }
  md += fmt::format(
      "Against the baseline at each length: mean difference variant − baseline [95% CI] of {}, "
      "paired by seed; **bold** where the interval excludes 0.\n\n",
      stage_metric_title(report, 0, evaluated_split(report, 0), primary_metric(stage.recipe)));
  md += to_markdown(table, 2) + "\n";
}

void add_extrapolation(const AblationReport& report, std::string& md) {
  const auto& multipliers = report.plan->ablation.context_multipliers();
  if (multipliers.empty()) return;
  const StagePlan& stage = report.runs.front().stages.front();
  const int64_t length = stage.recipe.data().sequence_length();
  const std::string primary = primary_metric(stage.recipe);
  TextTable table;
  table.header = {"variant"};
  for (const int m : multipliers) {
    table.header.push_back(fmt::format("{}× ({} tokens)", m, m * length));
  }
  std::map<std::string, std::string> reasons;  // variant -> why n/a
  for (const int v : variants_best_first(report)) {
    const std::string name = report.plan->ablation.variant(v).name();
    std::vector<std::string> row = {name};
    for (const int m : multipliers) {
      std::vector<double> values;
      bool not_applicable = false;
      for (const RunResult* r : finished_results(report, v)) {
        for (const ContextResult& c : r->stages.front().contexts) {
          if (c.multiplier != m) continue;
          if (c.value) {
            values.push_back(*c.value);
          } else {
            not_applicable = true;
            if (!reasons.contains(name)) {
              reasons[name] = c.note.rfind("n/a: ", 0) == 0 ? c.note.substr(5) : c.note;
            }
          }
        }
      }
      row.push_back(values.empty() && not_applicable ? "n/a" : format_mean_std(summarize(values)));
    }
    table.rows.push_back(std::move(row));
  }
  md += "## Length extrapolation\n\n";
  md += fmt::format(
      "{} of `checkpoints/best` on the {} split with windows of m × the training length "
      "(T = {}) via `rota eval --context`; mean ± std over seeds. The model never saw a "
      "sequence longer than T.\n\n",
      capitalised(stage_metric_title(report, 0, evaluated_split(report, 0), primary)),
      evaluated_split(report, 0), length);
  md += to_markdown(table) + "\n";
  if (!reasons.empty()) {
    md += "n/a: the encoding cannot run at that length:\n\n";
    for (const auto& [name, reason] : reasons) md += fmt::format("- {}: {}\n", name, reason);
    md += "\n";
  }
  add_extrapolation_comparisons(report, md);
}

void add_plots(const AblationReport& report, std::string& md) {
  if (report.plots.empty()) return;
  md += "## Plots\n\n";
  for (const PlotFile& plot : report.plots) {
    md += fmt::format("![{}]({})\n\n", plot.title, plot.svg);
    if (!plot.png.empty()) md += fmt::format("PNG: [{}]({})\n\n", plot.png, plot.png);
  }
  if (!report.png_note.empty()) md += report.png_note + "\n\n";
}

/// Which CPU (and Rota) made each finished run, and which came from records.
void add_provenance(const AblationReport& report, std::string& md) {
  std::map<std::string, std::vector<std::string>> runs_by_cpu;
  std::set<std::string> versions;
  size_t from_records = 0, finished = 0;
  for (const RunResult& r : report.results) {
    if (r.status != RunResult::Status::kOk) continue;
    ++finished;
    runs_by_cpu[r.cpu].push_back(fmt::format("{} seed {}", r.variant, r.seed));
    from_records += r.reused;
  }
  if (finished == 0) return;
  md += "## Where the runs were made\n\n";
  const auto cpu_name = [](const std::string& cpu) {
    return cpu.empty() ? std::string("CPU not recorded (runs made before run records)") : code(cpu);
  };
  if (runs_by_cpu.size() == 1 && runs_by_cpu.begin()->first.empty()) {
    md += fmt::format(
        "The CPU that ran these {} runs was not recorded (they were made before run records).\n",
        finished);
  } else if (runs_by_cpu.size() == 1) {
    md += fmt::format("All {} finished runs ran on {}.\n", finished,
                      cpu_name(runs_by_cpu.begin()->first));
  } else {
    for (const auto& [cpu, names] : runs_by_cpu) {
      std::string listed;
      for (const std::string& name : names) listed += (listed.empty() ? "" : ", ") + name;
      md += fmt::format("- {}: {} run(s): {}\n", cpu_name(cpu), names.size(), listed);
    }
    md +=
        "\nRuns on different CPUs differ in their last digits (the kernels sum in another "
        "order); seeds compare across them as usual.\n";
  }
  if (from_records > 0) {
    md += fmt::format(
        "\n{} of them were read from run records (`records/<variant>/seed<S>.json`: results, "
        "curves, the recipe and the CPU of each run) rather than run by this `rota ablate`.\n",
        from_records);
  }
  md += "\n";
}

void add_problems(const AblationReport& report, std::string& md) {
  std::string lines;
  std::string elsewhere;
  for (const RunResult& r : report.results) {
    if (r.status == RunResult::Status::kOk) continue;
    if (r.status == RunResult::Status::kOtherShard) {
      elsewhere += fmt::format("- {} seed {}: {}\n", r.variant, r.seed, r.error);
      continue;
    }
    lines += fmt::format("- {} seed {}: {}{}\n", r.variant, r.seed, status_name(r.status),
                         r.error.empty() ? "" : ": " + r.error);
  }
  if (!elsewhere.empty()) {
    md +=
        "## Runs of other shards\n\nNot run here and no record of them yet:\n\n" + elsewhere + "\n";
  }
  if (lines.empty()) return;
  md +=
      "## Runs without results\n\nRerun the same command to retry them (finished runs are "
      "kept).\n\n" +
      lines + "\n";
}

}  // namespace

std::string results_markdown(const AblationReport& report) {
  const recipes::Ablation& ablation = report.plan->ablation;
  std::string md = "# Ablation: " + ablation.name() + "\n\n";
  if (!ablation.description().empty()) md += ablation.description() + "\n\n";
  int finished = 0;
  for (const RunResult& r : report.results) finished += r.status == RunResult::Status::kOk;
  md += fmt::format(
      "Generated {} by `rota ablate`: {} of {} runs finished ({} variants × {} seeds{}).\n\n",
      report.generated_at, finished, report.results.size(), ablation.variant_size(),
      ablation.seeds_size(), ablation.has_follow_up() ? ", two stages each" : "");
  add_how_it_was_run(report, md);
  add_variants(report, md);
  if (!report.runs.empty()) {
    add_results(report, md);
    add_comparisons(report, md);
    add_extrapolation(report, md);
  }
  add_plots(report, md);
  add_provenance(report, md);
  add_problems(report, md);
  return md;
}

}  // namespace rota::experiments
