// The ablation's SVG plots (see ablation_plots.h).
#include "experiments/report/ablation_plots.h"

#include <algorithm>
#include <cmath>
#include <functional>
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

constexpr const char* kBandNote =
    "line: mean over the seeds; shaded band: their minimum to maximum";

/// One panel of a plot: its title, the variants it shows and the names it gives them.
struct PanelPlan {
  std::string title;
  std::vector<int> variants;
  std::vector<std::string> names;
};

/// The variants per panel, at most kMaxSeriesPerPanel each: one panel when they fit; else one
/// per level of the grid's first axis (series named by their other levels) when those fit;
/// else consecutive groups, each also showing the baseline when there is a single one.
std::vector<PanelPlan> plan_panels(const AblationReport& report) {
  const recipes::AblationPlan& plan = *report.plan;
  const int count = plan.ablation.variant_size();
  auto name_of = [&](int v) { return plan.ablation.variant(v).name(); };
  if (count <= kMaxSeriesPerPanel) {
    PanelPlan panel;
    for (int v = 0; v < count; ++v) {
      panel.variants.push_back(v);
      panel.names.push_back(name_of(v));
    }
    return {panel};
  }
  if (plan.axes.size() >= 2 && plan.levels.size() == static_cast<size_t>(count)) {
    std::vector<PanelPlan> panels(plan.axes[0].levels.size());
    for (size_t l = 0; l < panels.size(); ++l) {
      panels[l].title = plan.axes[0].name + " = " + plan.axes[0].levels[l];
    }
    for (int v = 0; v < count; ++v) {
      std::string rest;
      for (size_t a = 1; a < plan.axes.size(); ++a) {
        rest += (rest.empty() ? "" : "_") + plan.axes[a].levels[plan.levels[v][a]];
      }
      panels[plan.levels[v][0]].variants.push_back(v);
      panels[plan.levels[v][0]].names.push_back(rest);
    }
    if (std::all_of(panels.begin(), panels.end(), [](const PanelPlan& p) {
          return p.variants.size() <= static_cast<size_t>(kMaxSeriesPerPanel);
        })) {
      return panels;
    }
  }
  const bool one_baseline = !plan.baseline_of.empty() &&
                            std::all_of(plan.baseline_of.begin(), plan.baseline_of.end(),
                                        [&](int b) { return b == plan.baseline_of.front(); });
  const int baseline = one_baseline ? plan.baseline_of.front() : -1;
  const int per_panel = kMaxSeriesPerPanel - (baseline >= 0 ? 1 : 0);
  std::vector<PanelPlan> panels;
  for (int v = 0; v < count; ++v) {
    if (v == baseline) continue;
    if (panels.empty() ||
        static_cast<int>(panels.back().variants.size()) >= per_panel + (baseline >= 0 ? 1 : 0)) {
      panels.emplace_back();
      if (baseline >= 0) {
        panels.back().variants.push_back(baseline);
        panels.back().names.push_back(name_of(baseline) + " (baseline)");
      }
    }
    panels.back().variants.push_back(v);
    panels.back().names.push_back(name_of(v));
  }
  for (size_t p = 0; p < panels.size(); ++p) {
    panels[p].title = fmt::format("variants, part {} of {}", p + 1, panels.size());
  }
  return panels;
}

/// The panels of a plot with the series `series_of(variant, name)` makes.
std::string render_panels(const AblationReport& report, ChartOptions options,
                          const std::function<ChartSeries(int, const std::string&)>& series_of) {
  const std::vector<PanelPlan> plans = plan_panels(report);
  std::vector<ChartPanel> panels;
  for (const PanelPlan& plan : plans) {
    ChartPanel panel{plan.title, {}};
    for (size_t i = 0; i < plan.variants.size(); ++i) {
      panel.series.push_back(series_of(plan.variants[i], plan.names[i]));
    }
    panels.push_back(std::move(panel));
  }
  if (panels.size() == 1) {
    options.width = 640;
    options.height = 400;
  } else {
    options.width = 400;
    options.height = 300;
  }
  return render_small_multiples(options, panels, std::min<int>(3, panels.size()));
}

std::string metric_label(const std::string& metric) {
  return metric == "ppl" ? "perplexity" : metric == "mcc" ? "MCC" : metric;
}

PlotFile validation_plot(const AblationReport& report, int stage) {
  const recipes::Recipe& recipe = report.runs.front().stages[stage].recipe;
  const std::string primary = primary_metric(recipe);
  auto series_of = [&](int v, const std::string& name) {
    std::map<double, std::vector<double>> by_step;
    for (const RunResult* r : finished_results(report, v)) {
      if (static_cast<size_t>(stage) >= r->stages.size()) continue;
      for (const auto& [step, value] : r->stages[stage].curve) {
        by_step[static_cast<double>(step)].push_back(value);
      }
    }
    return band_series(name, by_step);
  };
  ChartOptions options;
  options.title = fmt::format("{}: {}validation {}", report.plan->ablation.name(),
                              stage == 0 ? "" : "fine-tuning ", metric_label(primary));
  options.subtitle = kBandNote;
  options.x_label = "step";
  options.y_label = "validation " + metric_label(primary);
  options.log_y = primary == "ppl";
  PlotFile plot;
  plot.title = stage == 0 ? "Validation curves" : "Fine-tuning validation curves";
  plot.svg = stage == 0 ? "validation_curves.svg" : "finetune_validation_curves.svg";
  write_file_atomically(report.out / plot.svg, render_panels(report, options, series_of));
  return plot;
}

PlotFile extrapolation_plot(const AblationReport& report) {
  const StagePlan& stage = report.runs.front().stages.front();
  const std::string primary = primary_metric(stage.recipe);
  const int64_t length = stage.recipe.data().sequence_length();
  auto series_of = [&](int v, const std::string& name) {
    std::map<double, std::vector<double>> by_multiplier;
    for (const RunResult* r : finished_results(report, v)) {
      for (const ContextResult& c : r->stages.front().contexts) {
        if (c.value) by_multiplier[c.multiplier].push_back(*c.value);
      }
    }
    return band_series(name, by_multiplier);
  };
  ChartOptions options;
  options.title = fmt::format("{}: length extrapolation (trained at {} tokens)",
                              report.plan->ablation.name(), length);
  options.subtitle = kBandNote;
  options.x_label = "evaluation length (× training length)";
  options.y_label = evaluated_split(report, 0) + " " + metric_label(primary);
  options.log_x = true;
  options.log_y = primary == "ppl";
  for (const int m : report.plan->ablation.context_multipliers()) {
    options.x_ticks.emplace_back(m, fmt::format("{}×", m));
  }
  PlotFile plot;
  plot.title = "Length extrapolation";
  plot.svg = "extrapolation.svg";
  write_file_atomically(report.out / plot.svg, render_panels(report, options, series_of));
  return plot;
}

/// The longest evaluation length (as a context multiplier) at which some finished run has its
/// loss by position; 0 when none has (not a causal LM, or results rebuilt from results.csv).
int position_multiplier(const AblationReport& report) {
  int best = 0;
  for (const RunResult& r : report.results) {
    if (r.status != RunResult::Status::kOk || r.stages.empty()) continue;
    for (const ContextResult& c : r.stages.front().contexts) {
      if (!c.positions.empty()) best = std::max(best, c.multiplier);
    }
  }
  return best;
}

PlotFile positions_plot(const AblationReport& report, int multiplier) {
  const StagePlan& stage = report.runs.front().stages.front();
  const int64_t length = stage.recipe.data().sequence_length() * multiplier;
  auto series_of = [&](int v, const std::string& name) {
    std::map<double, std::vector<double>> by_position;
    for (const RunResult* r : finished_results(report, v)) {
      for (const ContextResult& c : r->stages.front().contexts) {
        if (c.multiplier != multiplier) continue;
        for (const PositionLoss& p : c.positions) {
          if (p.tokens > 0 && !std::isnan(p.loss)) {
            by_position[static_cast<double>(p.first)].push_back(p.loss);
          }
        }
      }
    }
    return band_series(name, by_position);
  };
  ChartOptions options;
  options.title =
      fmt::format("{}: {} loss by position at {} tokens ({}× the training length)",
                  report.plan->ablation.name(), evaluated_split(report, 0), length, multiplier);
  options.subtitle =
      "mean over the seeds (band: min to max); a point covers the positions up to the next";
  options.x_label = "position in the window (log scale)";
  options.y_label = evaluated_split(report, 0) + " loss (nats per token)";
  options.log_x = true;
  for (int64_t p = 1; p <= length; p *= 2) {
    options.x_ticks.emplace_back(static_cast<double>(p), fmt::format("{}", p));
  }
  PlotFile plot;
  plot.title = "Loss by position";
  plot.svg = "positions.svg";
  write_file_atomically(report.out / plot.svg, render_panels(report, options, series_of));
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
  if (const int multiplier = position_multiplier(report); multiplier > 0) {
    plots.push_back(positions_plot(report, multiplier));
  }
  return plots;
}

}  // namespace rota::experiments
