// Progress and ETA of an ablation (see progress.h).
#include "experiments/progress.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>

#include <fmt/format.h>

namespace rota::experiments {

int64_t last_logged_step(const std::filesystem::path& run_dir) {
  std::ifstream in(run_dir / "metrics.jsonl", std::ios::binary);
  if (!in) return 0;
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  const std::streamoff tail = std::min<std::streamoff>(size, 8192);
  in.seekg(size - tail);
  std::string text(static_cast<size_t>(tail), '\0');
  in.read(text.data(), tail);
  // The last complete record's "step": N (records are whole lines; a torn last line is skipped).
  const std::string key = "\"step\":";
  size_t end = text.rfind('\n');
  while (end != std::string::npos && end > 0) {
    const size_t begin = text.rfind('\n', end - 1);
    const size_t start = begin == std::string::npos ? 0 : begin + 1;
    const std::string line = text.substr(start, end - start);
    const size_t at = line.find(key);
    if (at != std::string::npos) {
      return std::strtoll(line.c_str() + at + key.size(), nullptr, 10);
    }
    if (begin == std::string::npos) break;
    end = begin;
  }
  return 0;
}

std::optional<double> eta_seconds(const EtaInput& input) {
  if (input.done >= input.total) return 0.0;
  double per_run = 0;
  if (!input.finished_seconds.empty()) {
    for (const double s : input.finished_seconds) per_run += s;
    per_run /= static_cast<double>(input.finished_seconds.size());
  } else {
    int estimates = 0;
    for (const auto& [elapsed, fraction] : input.running) {
      if (fraction >= 0.05) {
        per_run += elapsed / fraction;
        ++estimates;
      }
    }
    if (estimates == 0) return std::nullopt;
    per_run /= estimates;
  }
  const size_t left_runs = input.total - input.done;
  const size_t running = std::min(input.running.size(), left_runs);
  double left = static_cast<double>(left_runs - running);
  for (size_t i = 0; i < running; ++i) {
    left += 1 - std::clamp(input.running[i].second, 0.0, 1.0);
  }
  const double parallel = static_cast<double>(
      std::max<size_t>(1, std::min(static_cast<size_t>(std::max(1, input.jobs)), left_runs)));
  return left * per_run / parallel;
}

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const auto total = static_cast<int64_t>(std::llround(seconds));
  if (total < 60) return fmt::format("{} s", total);
  const int64_t minutes = (total + 30) / 60;
  if (minutes < 60) return fmt::format("{} min", minutes);
  return fmt::format("{} h {:02d} min", minutes / 60, minutes % 60);
}

}  // namespace rota::experiments
