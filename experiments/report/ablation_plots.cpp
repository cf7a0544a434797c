// The ablation's SVG plots (see ablation_plots.h).
#include "experiments/report/ablation_plots.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "experiments/report/svg_chart.h"
#include "framework/base/file_io.h"

namespace rota::experiments {

namespace {

/// Mean, min and max of each x's values, as one chart series.
ChartSeries band_series(const std::string& name,
                        const std::map<double, std::vector<double>>& by_x) {
  ChartSeries series;
  series.name = name;
  for (const auto& [x, values] : by_x) {
    if (values.empty()) continue;
    double sum = 0;
    for (double v : values) sum += v;
    series.x.push_back(x);
    series.y.push_back(sum / static_cast<double>(values.size()));
    series.low.push_back(*std::min_element(values.begin(), values.end()));
    series.high.push_back(*std::max_element(values.begin(), values.end()));
  }
  return series;
}

std::string metric_label(const std::string& metric) {
  return metric == "ppl" ? "perplexity" : metric == "mcc" ? "MCC" : metric;
}

PlotFile validation_plot(const AblationReport& report, int stage) {
  const recipes::Recipe& recipe = report.runs.front().stages[stage].recipe;
  const std::string primary = primary_metric(recipe);
  std::vector<ChartSeries> series;
  for (int v = 0; v < report.plan->ablation.variant_size(); ++v) {
    std::map<double, std::vector<double>> by_step;
    for (const RunResult* r : finished_results(report, v)) {
      if (static_cast<size_t>(stage) >= r->stages.size()) continue;
      for (const auto& [step, value] : r->stages[stage].curve) {
        by_step[static_cast<double>(step)].push_back(value);
      }
    }
    series.push_back(band_series(report.plan->ablation.variant(v).name(), by_step));
  }
  ChartOptions options;
  options.title =
      fmt::format("{}: {}validation {} (mean, min–max over seeds)", report.plan->ablation.name(),
                  stage == 0 ? "" : "fine-tuning ", metric_label(primary));
  options.x_label = "step";
  options.y_label = "validation " + metric_label(primary);
  options.log_y = primary == "ppl";
  PlotFile plot;
  plot.title = stage == 0 ? "Validation curves" : "Fine-tuning validation curves";
  plot.svg = stage == 0 ? "validation_curves.svg" : "finetune_validation_curves.svg";
  write_file_atomically(report.out / plot.svg, render_line_chart(options, series));
  return plot;
}

PlotFile extrapolation_plot(const AblationReport& report) {
  const StagePlan& stage = report.runs.front().stages.front();
  const std::string primary = primary_metric(stage.recipe);
  const int64_t length = stage.recipe.data().sequence_length();
  std::vector<ChartSeries> series;
  for (int v = 0; v < report.plan->ablation.variant_size(); ++v) {
    std::map<double, std::vector<double>> by_multiplier;
    for (const RunResult* r : finished_results(report, v)) {
      for (const ContextResult& c : r->stages.front().contexts) {
        if (c.value) by_multiplier[c.multiplier].push_back(*c.value);
      }
    }
    series.push_back(band_series(report.plan->ablation.variant(v).name(), by_multiplier));
  }
  ChartOptions options;
  options.title = fmt::format("{}: length extrapolation (trained at {} tokens)",
                              report.plan->ablation.name(), length);
  options.x_label = "evaluation length (× training length)";
  options.y_label = "test " + metric_label(primary);
  options.log_x = true;
  options.log_y = primary == "ppl";
  for (const int m : report.plan->ablation.context_multipliers()) {
    options.x_ticks.emplace_back(m, fmt::format("{}×", m));
  }
  PlotFile plot;
  plot.title = "Length extrapolation";
  plot.svg = "extrapolation.svg";
  write_file_atomically(report.out / plot.svg, render_line_chart(options, series));
  return plot;
}

}  // namespace

std::vector<PlotFile> write_plots(const AblationReport& report) {
  std::vector<PlotFile> plots;
  if (report.runs.empty()) return plots;
  for (const StagePlan& stage : report.runs.front().stages) {
    // Results rebuilt from results.csv have no curves.
    const bool curves =
        std::any_of(report.results.begin(), report.results.end(), [&](const RunResult& r) {
          return static_cast<size_t>(stage.index) < r.stages.size() &&
                 !r.stages[stage.index].curve.empty();
        });
    if (curves) plots.push_back(validation_plot(report, stage.index));
  }
  if (report.plan->ablation.context_multipliers_size() >= 2) {
    plots.push_back(extrapolation_plot(report));
  }
  return plots;
}

}  // namespace rota::experiments
