// Memory budget checks before a model is built (see memory_budget.h).
#include "app/setup/memory_budget.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <sstream>

#include "framework/io/log.h"
#include "recipes/recipe_error.h"
#include "recipes/resolve.h"
#include "recipes/validate.h"

namespace rota::app {

namespace {

/// The first integer after `key` in a "key: value kB" file such as /proc/meminfo, in bytes.
int64_t meminfo_bytes(const std::string& key) {
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + ":", 0) != 0) continue;
    std::istringstream fields(line.substr(key.size() + 1));
    int64_t kb = 0;
    if (fields >> kb) return kb * 1024;
  }
  return 0;
}

/// A cgroup v2 file holding one number ("max" or unreadable: -1).
int64_t cgroup_number(const char* path) {
  std::ifstream in(path);
  std::string text;
  if (!(in >> text) || text == "max") return -1;
  try {
    return std::stoll(text);
  } catch (...) {
    return -1;
  }
}

}  // namespace

int64_t available_memory_bytes() {
  int64_t available = meminfo_bytes("MemAvailable");
  const int64_t limit = cgroup_number("/sys/fs/cgroup/memory.max");
  const int64_t used = cgroup_number("/sys/fs/cgroup/memory.current");
  if (limit > 0 && used >= 0) {
    const int64_t left = std::max<int64_t>(0, limit - used);
    available = available > 0 ? std::min(available, left) : left;
  }
  return available;
}

std::string format_bytes(double bytes) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB", "PB"};
  int unit = 0;
  while (bytes >= 1024.0 && unit < 5) {
    bytes /= 1024.0;
    ++unit;
  }
  // Three significant digits, but whole numbers from 100 up: {:.3g} would print 1010 as 1.01e+03.
  if (unit == 0 || bytes >= 99.95) return fmt::format("{:.0f} {}", bytes, units[unit]);
  return fmt::format("{:.3g} {}", bytes, units[unit]);
}

int64_t parse_memory_size(const std::string& text, const std::string& option) {
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (...) {
    used = 0;
  }
  std::string unit = text.substr(used);
  for (char& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  double scale = 0;
  if (unit.empty() || unit == "B") scale = 1;
  if (unit == "K" || unit == "KB" || unit == "KIB") scale = 1024.0;
  if (unit == "M" || unit == "MB" || unit == "MIB") scale = 1024.0 * 1024;
  if (unit == "G" || unit == "GB" || unit == "GIB") scale = 1024.0 * 1024 * 1024;
  if (unit == "T" || unit == "TB" || unit == "TIB") scale = 1024.0 * 1024 * 1024 * 1024;
  const double bytes = value * scale;
  if (used == 0 || scale == 0 || !std::isfinite(bytes) || bytes < 1 || bytes > 9.0e18) {
    throw recipes::RecipeError(fmt::format(
        "{} {}: not a memory size; give a positive number with an optional unit K, M, G or T "
        "(e.g. 16G)",
        option, text));
  }
  return static_cast<int64_t>(bytes);
}

void check_memory_budget(const models::MemoryEstimate& estimate, const MemoryBudget& budget,
                         const recipes::Recipe& recipe, const std::string& purpose, int64_t batch,
                         int64_t sequence_length) {
  const bool explicit_limit = budget.limit_bytes > 0;
  const double limit = explicit_limit ? static_cast<double>(budget.limit_bytes)
                                      : static_cast<double>(available_memory_bytes());
  io::log_debug("memory: {} needs about {} (weights {}, state {}, activations {}); limit {}",
                purpose, format_bytes(estimate.total()), format_bytes(estimate.parameter_bytes),
                format_bytes(estimate.state_bytes), format_bytes(estimate.activation_bytes),
                limit > 0 ? format_bytes(limit) : "unknown");
  if (limit <= 0 || estimate.total() <= limit) return;
  const recipes::Model& m = recipe.model();
  std::string parts = fmt::format("{} of weights ({:.3g} parameters)",
                                  format_bytes(estimate.parameter_bytes), estimate.parameters);
  if (estimate.state_bytes > 0) {
    parts +=
        fmt::format(", {} of gradients and optimizer state", format_bytes(estimate.state_bytes));
  }
  if (batch > 0) {
    parts +=
        fmt::format(", {} of activations for {} × {} tokens through {} layers",
                    format_bytes(estimate.activation_bytes), batch, sequence_length, m.layers());
  }
  // Training whose activations are a large part: running long sequences in segments keeps one
  // segment's activations (causal linear models that carry their state), recomputing blocks
  // keeps only the blocks' inputs.
  const bool activations_matter =
      purpose == "training" && batch > 0 && estimate.activation_bytes >= 0.25 * estimate.total();
  constexpr int64_t kSuggestedSegment = 1024;
  const bool suggest_segments = activations_matter && recipe.train().segment_length() == 0 &&
                                sequence_length > kSuggestedSegment &&
                                m.kind() == recipes::Model::CAUSAL_LM &&
                                recipes::segment_refusal(m).empty();
  const bool suggest_recompute = activations_matter && !suggest_segments &&
                                 recipe.train().segment_length() == 0 &&
                                 !recipe.train().recompute_blocks() && m.layers() > 1;
  std::string hint;
  if (suggest_segments) {
    hint = fmt::format(
        ", set train.segment_length: {} (keeps one segment's activations and the "
        "attention states between segments)",
        kSuggestedSegment);
  } else if (suggest_recompute) {
    hint = ", set train.recompute_blocks: true (keeps only each block's input)";
  }
  throw recipes::RecipeError(fmt::format(
      "model: {} needs about {} ({}), more than the {} {}; make model.layers ({}), "
      "model.width ({}), model.ffn_width ({}){} smaller{}{}",
      purpose, format_bytes(estimate.total()), parts, format_bytes(limit),
      explicit_limit ? "allowed by --max-memory" : "this machine has available", m.layers(),
      m.width(), m.has_ffn_width() ? m.ffn_width() : recipes::default_ffn_width(m),
      batch > 0 ? " or data.batch_size × data.sequence_length (rota eval: --context)" : "", hint,
      explicit_limit ? ", or raise --max-memory" : ""));
}

}  // namespace rota::app
