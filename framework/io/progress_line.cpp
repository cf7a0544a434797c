// Training progress display: EMA-smoothed loss, throughput and ETA, throttled terminal redraws.
#include "framework/io/progress_line.h"

#include <unistd.h>

#include <chrono>
#include <cmath>

#include <fmt/format.h>

namespace rota::io {
namespace {

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// An EMA started at 0 is biased toward 0 for the first ~1/(1-decay) updates; dividing by
// 1 - decay^n removes that bias (as Adam does), so the first steps show real values.
double ema_value(double ema, double decay, int64_t n) {
  if (n == 0) return std::nan("");
  return ema / (1.0 - std::pow(decay, static_cast<double>(n)));
}

}  // namespace

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const auto s = static_cast<int64_t>(std::llround(seconds));
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}m{:02d}s", s / 60, s % 60);
  if (s < 86400) return fmt::format("{}h{:02d}m", s / 3600, (s % 3600) / 60);
  return fmt::format("{}d{:02d}h", s / 86400, (s % 86400) / 3600);
}

std::string format_count(double value) {
  if (!std::isfinite(value)) return "?";
  const double magnitude = std::fabs(value);
  if (magnitude < 1e3) return fmt::format("{:.0f}", value);
  if (magnitude < 1e6) return fmt::format("{:.1f}k", value / 1e3);
  if (magnitude < 1e9) return fmt::format("{:.2f}M", value / 1e6);
  return fmt::format("{:.2f}G", value / 1e9);
}

std::string format_small(double value) {
  if (value == 0) return "0";
  if (!std::isfinite(value)) return fmt::format("{}", value);
  std::string text = fmt::format("{:.1e}", value);  // "5.8e-04"
  const size_t e = text.find('e');
  std::string exponent = text.substr(e + 1);
  const bool negative = exponent[0] == '-';
  size_t digits = (exponent[0] == '-' || exponent[0] == '+') ? 1 : 0;
  while (digits + 1 < exponent.size() && exponent[digits] == '0') ++digits;
  return text.substr(0, e) + "e" + (negative ? "-" : "") + exponent.substr(digits);
}

ProgressLine::ProgressLine(ProgressOptions options) : options_(std::move(options)) {
  if (!options_.clock) options_.clock = steady_seconds;
  if (options_.log_every < 1) options_.log_every = 1;
  terminal_ = options_.terminal.value_or(options_.out != nullptr && ::isatty(fileno(options_.out)));
  last_time_ = options_.clock();
  if (terminal_) set_log_status_line(this);
}

ProgressLine::~ProgressLine() {
  if (terminal_) set_log_status_line(nullptr);
  finish();
}

void ProgressLine::update(const StepProgress& progress) {
  const double now = options_.clock();
  const double decay = options_.smoothing;
  loss_ema_ = decay * loss_ema_ + (1 - decay) * progress.loss;
  ++loss_updates_;
  step_seconds_ema_ = decay * step_seconds_ema_ + (1 - decay) * (now - last_time_);
  tokens_ema_ = decay * tokens_ema_ + (1 - decay) * static_cast<double>(progress.tokens);
  ++updates_;
  last_time_ = now;
  last_ = progress;

  const bool last_step = options_.total_steps > 0 && progress.step >= options_.total_steps;
  const bool log_step = last_step || progress.step % options_.log_every == 0;
  if (log_step && options_.on_log_step) options_.on_log_step(text());
  if (terminal_) {
    if (last_step || now - last_draw_time_ >= 1.0 / options_.max_redraw_hz) {
      last_draw_time_ = now;
      draw();
    }
  } else if (log_step && options_.out != nullptr) {
    fmt::print(options_.out, "{}\n", text());
    std::fflush(options_.out);
  }
}

void ProgressLine::finish() {
  if (terminal_ && line_visible_ && options_.out != nullptr) {
    std::fputs("\n", options_.out);
    std::fflush(options_.out);
  }
  line_visible_ = false;
}

double ProgressLine::smoothed_loss() const {
  return ema_value(loss_ema_, options_.smoothing, loss_updates_);
}

void ProgressLine::restore_smoothed_loss(double raw, int64_t steps) {
  loss_ema_ = raw;
  loss_updates_ = steps;
}

double ProgressLine::tokens_per_second() const {
  const double seconds = ema_value(step_seconds_ema_, options_.smoothing, updates_);
  const double tokens = ema_value(tokens_ema_, options_.smoothing, updates_);
  return seconds > 0 ? tokens / seconds : std::nan("");
}

double ProgressLine::eta_seconds() const {
  if (options_.total_steps <= 0 || updates_ == 0) return std::nan("");
  const double remaining =
      static_cast<double>(std::max<int64_t>(0, options_.total_steps - last_.step));
  return remaining * ema_value(step_seconds_ema_, options_.smoothing, updates_);
}

std::string ProgressLine::text() const {
  std::string line = options_.total_steps > 0
                         ? fmt::format("step {}/{}", last_.step, options_.total_steps)
                         : fmt::format("step {}", last_.step);
  line += fmt::format(" | loss(ema) {:.4g} | lr {} | gnorm {:.3g} | {} tok/s", smoothed_loss(),
                      format_small(last_.lr), last_.grad_norm, format_count(tokens_per_second()));
  if (options_.total_steps > 0) line += " | eta " + format_duration(eta_seconds());
  return line;
}

void ProgressLine::draw() {
  if (options_.out == nullptr) return;
  // \r returns to column 0 and ESC[K clears what a longer previous line left behind.
  fmt::print(options_.out, "\r{}\x1b[K", text());
  std::fflush(options_.out);
  line_visible_ = true;
}

void ProgressLine::clear_for_log() {
  if (!line_visible_ || options_.out == nullptr) return;
  std::fputs("\r\x1b[K", options_.out);
  std::fflush(options_.out);
}

void ProgressLine::redraw_after_log() {
  if (line_visible_) draw();
}

}  // namespace rota::io
