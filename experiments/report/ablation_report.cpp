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
