// Training progress display: a \r-redrawn line on a terminal, plain lines every N steps otherwise.
//
//   step 1200/20000 | loss 3.412 | lr 5.8e-4 | gnorm 0.91 | 41.2k tok/s | eta 1h12m
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>

#include "framework/io/log.h"

namespace rota::io {

struct ProgressOptions {
  int64_t total_steps = 0;    // 0: unknown (no "/total", no ETA)
  int64_t log_every = 10;     // plain-line cadence in steps (not on a terminal)
  double max_redraw_hz = 10;  // terminal redraw limit
  double smoothing = 0.9;     // EMA decay of the shown loss, step time and tokens per step
  std::FILE* out = stdout;
  /// Redraw one line with \r (true) or print plain lines (false); default: isatty(out).
  std::optional<bool> terminal;
  /// Monotonic seconds; default std::chrono::steady_clock. Tests pass a fake clock.
  std::function<double()> clock;
  /// Called with the line text every log_every steps and at the last step, in both modes
  /// (e.g. to put plain lines in train.log while the terminal shows the live line).
  std::function<void(const std::string&)> on_log_step;
};

/// What the training loop reports after each optimizer step.
struct StepProgress {
  int64_t step = 0;  // steps completed (1 after the first)
  double loss = 0;
  double lr = 0;
  double grad_norm = 0;  // before clipping
  int64_t tokens = 0;    // tokens processed in this step
};

/// Not thread-safe: call from the training thread. On a terminal it registers itself with the
/// logger so log lines appear above the live line instead of through it.
class ProgressLine : public StatusLine {
 public:
  explicit ProgressLine(ProgressOptions options);
  ~ProgressLine() override;
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  /// Records a finished step and redraws (terminal, at most max_redraw_hz, always on the last
  /// step) or prints a plain line (every log_every steps and at the last step).
  void update(const StepProgress& progress);
  /// Ends the live line with a newline (terminal only); update() may be called again after.
  void finish();

  /// The current line text.
  std::string text() const;
  /// Bias-corrected EMA of the loss (NaN before the first update).
  double smoothed_loss() const;
  /// Continues the loss EMA of an earlier process (a resumed run): `raw` is its value before
  /// bias correction after `steps` updates.
  void restore_smoothed_loss(double raw, int64_t steps);
  /// Tokens per second from the smoothed step time and tokens per step.
  double tokens_per_second() const;
  /// Seconds left at the smoothed step time (NaN when total_steps is 0 or before any step).
  double eta_seconds() const;
  bool terminal() const { return terminal_; }

  void clear_for_log() override;
  void redraw_after_log() override;

 private:
  void draw();

  ProgressOptions options_;
  bool terminal_ = false;
  bool line_visible_ = false;  // a live line is on the screen (terminal mode)
  double last_time_ = 0;       // clock at the previous update (or construction)
  double last_draw_time_ = -1e300;
  int64_t updates_ = 0;
  StepProgress last_{};
  int64_t loss_updates_ = 0;  // the loss EMA's own count (restore_smoothed_loss may set it)
  double loss_ema_ = 0;       // EMAs without bias correction; see ema_value
  double step_seconds_ema_ = 0;
  double tokens_ema_ = 0;
};

/// "42s", "3m05s", "1h12m", "2d03h".
std::string format_duration(double seconds);
/// 41200 -> "41.2k", 1.5e6 -> "1.50M", 950 -> "950".
std::string format_count(double value);
/// 5.8e-4 -> "5.8e-4" (two significant digits, short exponent); 0 -> "0".
std::string format_small(double value);

}  // namespace rota::io
