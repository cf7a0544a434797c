// Mean ± sample standard deviation and number formatting (see summary_stats.h).
#include "experiments/report/summary_stats.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace rota::experiments {

Summary summarize(const std::vector<double>& values) {
  Summary s;
  double sum = 0;
  for (double v : values) {
    if (!std::isfinite(v)) continue;
    sum += v;
    ++s.n;
  }
  if (s.n == 0) return s;
  s.mean = sum / s.n;
  if (s.n < 2) {
    s.std = NAN;
    return s;
  }
  double squares = 0;
  for (double v : values) {
    if (std::isfinite(v)) squares += (v - s.mean) * (v - s.mean);
  }
  s.std = std::sqrt(squares / (s.n - 1));
  return s;
}

std::string format_number(double value, int significant) {
  if (!std::isfinite(value)) return "—";
  if (value == 0) return "0";
  const int magnitude = static_cast<int>(std::floor(std::log10(std::abs(value))));
  const int decimals = std::clamp(significant - 1 - magnitude, 0, 8);
  return fmt::format("{:.{}f}", value, decimals);
}

std::string format_mean_std(const Summary& summary) {
  if (summary.n == 0) return "—";
  if (summary.n == 1 || !std::isfinite(summary.std)) return format_number(summary.mean);
  if (summary.std == 0) return format_number(summary.mean) + " ± 0";
  const int magnitude = static_cast<int>(std::floor(std::log10(summary.std)));
  const int decimals = std::clamp(1 - magnitude, 0, 8);
  return fmt::format("{:.{}f} ± {:.{}f}", summary.mean, decimals, summary.std, decimals);
}

}  // namespace rota::experiments
