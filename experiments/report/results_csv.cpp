// results.csv of an ablation: one row per variant × seed (see ablation_report.h).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>

#include <fmt/format.h>

#include "experiments/report/ablation_report.h"
#include "experiments/report/text_table.h"
#include "framework/base/error.h"

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
  table.header.push_back("cpu");
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
    row.push_back(result.cpu);
    row.push_back(result.error);
    table.rows.push_back(std::move(row));
  }
  return to_csv(table);
}

namespace {

/// One results.csv row by column name.
struct CsvRow {
  const std::map<std::string, size_t>* columns;
  const std::vector<std::string>* fields;
  size_t index;  // 1-based data row, for messages

  bool has(const std::string& column) const { return columns->contains(column); }
  const std::string& text(const std::string& column) const {
    const auto it = columns->find(column);
    if (it == columns->end()) throw Error("results.csv has no column '" + column + "'");
    return (*fields)[it->second];
  }
  double number(const std::string& column) const {
    const std::string& cell = text(column);
    char* end = nullptr;
    const double value = std::strtod(cell.c_str(), &end);
    if (cell.empty() || end != cell.c_str() + cell.size() || !std::isfinite(value)) {
      throw Error(
          fmt::format("results.csv row {}: {} = '{}' is not a number", index, column, cell));
    }
    return value;
  }
};

RunResult::Status status_from_name(const std::string& name, size_t row) {
  for (const auto status :
       {RunResult::Status::kOk, RunResult::Status::kFailed, RunResult::Status::kInterrupted,
        RunResult::Status::kNotRun, RunResult::Status::kOtherShard}) {
    if (status_name(status) == name) return status;
  }
  throw Error(fmt::format("results.csv row {}: unknown status '{}'", row, name));
}

StageResult stage_from_row(const CsvRow& row, const StagePlan& stage) {
  const std::string p = stage_prefix(stage.index);
  StageResult s;
  s.kind = model_kind_name(stage.recipe);
  s.primary = primary_metric(stage.recipe);
  s.run_dir = stage.run_dir;
  s.parameters = static_cast<int64_t>(row.number(p + "parameters"));
  s.train_time_s = row.number(p + "train_time_s");
  s.tokens_per_s = row.number(p + "tokens_per_s");
  s.steps = static_cast<int64_t>(row.number(p + "steps"));
  s.best_valid_step = static_cast<int64_t>(row.number(p + "best_valid_step"));
  s.test_split = row.text(p + "test_split");
  for (const std::string& m : reported_metrics(stage.recipe)) {
    if (!row.text(p + "best_valid_" + m).empty())
      s.best_valid[m] = row.number(p + "best_valid_" + m);
    if (!row.text(p + "test_" + m).empty()) s.test[m] = row.number(p + "test_" + m);
  }
  return s;
}

}  // namespace

std::vector<RunResult> results_from_csv(const std::string& text,
                                        const std::vector<PlannedRun>& runs) {
  const TextTable table = parse_csv(text);
  std::map<std::string, size_t> columns;
  for (size_t i = 0; i < table.header.size(); ++i) columns[table.header[i]] = i;
  std::map<std::pair<std::string, uint64_t>, size_t> row_of;
  for (size_t r = 0; r < table.rows.size(); ++r) {
    const CsvRow row{&columns, &table.rows[r], r + 1};
    row_of[{row.text("variant"), static_cast<uint64_t>(row.number("seed"))}] = r;
  }
  std::vector<RunResult> results;
  for (const PlannedRun& run : runs) {
    RunResult result;
    result.variant = run.variant;
    result.seed = run.seed;
    const auto found = row_of.find({run.variant, run.seed});
    if (found == row_of.end()) {
      result.error = "not in results.csv";
      results.push_back(std::move(result));
      continue;
    }
    const CsvRow row{&columns, &table.rows[found->second], found->second + 1};
    result.status = status_from_name(row.text("status"), row.index);
    result.error = row.text("error");
    // Reports of a Rota before records have no cpu column.
    if (row.has("cpu")) result.cpu = row.text("cpu");
    const std::string& overrides = row.text("overrides");
    for (size_t start = 0; !overrides.empty() && start <= overrides.size();) {
      const size_t end = std::min(overrides.find("; ", start), overrides.size());
      result.overrides.push_back(overrides.substr(start, end - start));
      start = end + 2;
    }
    if (result.status == RunResult::Status::kOk) {
      for (const StagePlan& stage : run.stages) {
        result.stages.push_back(stage_from_row(row, stage));
      }
      const std::string primary = primary_metric(run.stages.front().recipe);
      const int64_t length = run.stages.front().recipe.data().sequence_length();
      for (const auto& [column, index] : columns) {
        const std::string prefix = "test_" + primary + "_x";
        if (column.rfind(prefix, 0) != 0) continue;
        ContextResult c;
        c.multiplier = std::atoi(column.c_str() + prefix.size());
        c.length = c.multiplier * length;
        const std::string& cell = row.text(column);
        if (cell == "n/a") {
          c.note = "n/a: the encoding cannot run at that length (from results.csv)";
        } else if (!cell.empty()) {
          c.value = row.number(column);
        } else {
          continue;
        }
        result.stages.front().contexts.push_back(std::move(c));
      }
      std::sort(result.stages.front().contexts.begin(), result.stages.front().contexts.end(),
                [](const ContextResult& a, const ContextResult& b) {
                  return a.multiplier < b.multiplier;
                });
    }
    results.push_back(std::move(result));
  }
  return results;
}

}  // namespace rota::experiments
