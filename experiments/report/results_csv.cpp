// results.csv of an ablation: one row per variant × seed (see ablation_report.h).
#include <fmt/format.h>

#include "experiments/report/ablation_report.h"
#include "experiments/report/text_table.h"

namespace rota::experiments {

namespace {

std::string csv_number(double value) {
  return fmt::format("{:.8g}", value);
}

std::string joined(const std::vector<std::string>& items, const std::string& separator) {
  std::string text;
  for (const std::string& item : items) text += (text.empty() ? "" : separator) + item;
  return text;
}

std::string metric_or_empty(const MetricMap& metrics, const std::string& name) {
  const auto it = metrics.find(name);
  return it == metrics.end() ? "" : csv_number(it->second);
}

}  // namespace

std::string results_csv(const AblationReport& report) {
  TextTable table;
  table.header = {"variant", "seed", "status", "overrides"};
  if (report.runs.empty()) return to_csv(table);
  const PlannedRun& first = report.runs.front();
  const auto& multipliers = report.plan->ablation.context_multipliers();
  for (const StagePlan& stage : first.stages) {
    const std::string p = stage_prefix(stage.index);
    for (const char* column :
         {"parameters", "train_time_s", "tokens_per_s", "steps", "best_valid_step"}) {
      table.header.push_back(p + column);
    }
    for (const std::string& m : reported_metrics(stage.recipe)) {
      table.header.push_back(p + "best_valid_" + m);
    }
    table.header.push_back(p + "test_split");
    for (const std::string& m : reported_metrics(stage.recipe))
      table.header.push_back(p + "test_" + m);
    if (stage.index == 0) {
      for (const int m : multipliers) {
        table.header.push_back(fmt::format("test_{}_x{}", primary_metric(stage.recipe), m));
      }
    }
  }
  table.header.push_back("error");

  for (size_t i = 0; i < report.runs.size(); ++i) {
    const PlannedRun& run = report.runs[i];
    const RunResult& result = report.results[i];
    std::vector<std::string> row = {run.variant, std::to_string(run.seed),
                                    status_name(result.status), joined(result.overrides, "; ")};
    for (const StagePlan& stage : run.stages) {
      const bool have = result.status == RunResult::Status::kOk &&
                        static_cast<size_t>(stage.index) < result.stages.size();
      const std::vector<std::string> metrics = reported_metrics(stage.recipe);
      const size_t cells = 5 + 2 * metrics.size() + 1 +
                           (stage.index == 0 ? static_cast<size_t>(multipliers.size()) : 0);
      if (!have) {
        row.insert(row.end(), cells, "");
        continue;
      }
      const StageResult& s = result.stages[stage.index];
      row.push_back(std::to_string(s.parameters));
      row.push_back(csv_number(s.train_time_s));
      row.push_back(csv_number(s.tokens_per_s));
      row.push_back(std::to_string(s.steps));
      row.push_back(std::to_string(s.best_valid_step));
      for (const std::string& m : metrics) row.push_back(metric_or_empty(s.best_valid, m));
      row.push_back(s.test_split);
      for (const std::string& m : metrics) row.push_back(metric_or_empty(s.test, m));
      if (stage.index == 0) {
        for (const int m : multipliers) {
          std::string cell;
          for (const ContextResult& c : s.contexts) {
            if (c.multiplier == m) cell = c.value ? csv_number(*c.value) : "n/a";
          }
          row.push_back(cell);
        }
      }
    }
    row.push_back(result.error);
    table.rows.push_back(std::move(row));
  }
  return to_csv(table);
}

}  // namespace rota::experiments
