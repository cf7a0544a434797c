// Shared helpers of the ablation reports (see ablation_report.h).
#include "experiments/report/ablation_report.h"

namespace rota::experiments {

std::vector<const RunResult*> finished_results(const AblationReport& report, int variant_index) {
  std::vector<const RunResult*> found;
  for (size_t i = 0; i < report.runs.size() && i < report.results.size(); ++i) {
    if (report.runs[i].variant_index == variant_index &&
        report.results[i].status == RunResult::Status::kOk) {
      found.push_back(&report.results[i]);
    }
  }
  return found;
}

std::string evaluated_split(const AblationReport& report, int stage) {
  for (const RunResult& r : report.results) {
    if (r.status == RunResult::Status::kOk && static_cast<size_t>(stage) < r.stages.size()) {
      return r.stages[stage].test_split;
    }
  }
  return "test";
}

bool evaluates_on_validation(const AblationReport& report) {
  const size_t stages = report.runs.empty() ? 0 : report.runs.front().stages.size();
  for (size_t stage = 0; stage < stages; ++stage) {
    if (evaluated_split(report, static_cast<int>(stage)) != "test") return true;
  }
  return false;
}

std::string capitalised(std::string text) {
  if (!text.empty() && text[0] >= 'a' && text[0] <= 'z') text[0] = static_cast<char>(text[0] - 32);
  return text;
}

std::string stage_prefix(int stage) {
  return stage == 0 ? "" : "finetune_";
}

std::string stage_metric_title(const AblationReport& report, int stage, const std::string& what,
                               const std::string& metric) {
  const std::string name = metric == "ppl" ? "PPL" : metric == "mcc" ? "MCC" : metric;
  const bool two_stages = !report.runs.empty() && report.runs.front().stages.size() > 1;
  const std::string stage_name = !two_stages ? "" : stage == 0 ? "pretrain " : "fine-tune ";
  return stage_name + what + " " + name;
}

}  // namespace rota::experiments
