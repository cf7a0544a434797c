// A small leveled logger: timestamped lines to stderr and optionally a file (train.log).
//
// The level comes from ROTA_LOG_LEVEL (trace|debug|info|warn|error|off; default info) via
// init_logging_from_env(), or from set_log_level (a --log-level flag). Thread-safe.
#pragma once

#include <cstdio>
#include <filesystem>
#include <string_view>
#include <utility>

#include <fmt/format.h>

namespace rota::io {

enum class LogLevel { kTrace, kDebug, kInfo, kWarn, kError, kOff };

/// "trace", "debug", "info", "warn" (or "warning"), "error", "off", any case; throws listing the
/// accepted names otherwise.
LogLevel parse_log_level(std::string_view name);
const char* log_level_name(LogLevel level);

void set_log_level(LogLevel level);
LogLevel log_level();
/// Sets the level from ROTA_LOG_LEVEL when it is set; throws naming the variable when its value
/// is not a level.
void init_logging_from_env();

/// The log file of a run directory: RUN/train.log.
inline constexpr char kTrainLogFile[] = "train.log";

/// Also appends every line to `path` (e.g. RUN/train.log); an empty path stops file logging.
/// Setting the file already in use keeps it open.
void set_log_file(const std::filesystem::path& path);
/// The file lines are appended to (empty when none).
std::filesystem::path log_file();

/// Logs to `path` for the scope's lifetime, then back to the file used before (none, or an
/// outer scope's); nested scopes on the same file keep it open.
class LogFileScope {
 public:
  explicit LogFileScope(const std::filesystem::path& path);
  ~LogFileScope();
  LogFileScope(const LogFileScope&) = delete;
  LogFileScope& operator=(const LogFileScope&) = delete;

 private:
  std::filesystem::path previous_;
};
/// Where console lines go (default stderr; nullptr: nowhere, file only).
void set_log_console(std::FILE* stream);

/// A one-line display at the bottom of the terminal (ProgressLine). While one is registered,
/// a console log line first clears it and then has it redrawn below the message.
class StatusLine {
 public:
  virtual ~StatusLine() = default;
  virtual void clear_for_log() = 0;
  virtual void redraw_after_log() = 0;
};
/// Registers (or with nullptr unregisters) the status line.
void set_log_status_line(StatusLine* status);

/// "2026-11-21 03:37:01.123 INFO  message": the line format, for tests.
std::string format_log_line(LogLevel level, std::string_view message, double unix_time);

inline bool log_enabled(LogLevel level) {
  return level != LogLevel::kOff && static_cast<int>(level) >= static_cast<int>(log_level());
}
/// Writes one line at `level` (if enabled).
void log_message(LogLevel level, std::string_view message);
/// Writes one line at `level` to the log file only (whatever the level, when a file is set):
/// plain copies of what a live terminal display shows.
void log_to_file(LogLevel level, std::string_view message);

template <typename... Args>
void log_trace(fmt::format_string<Args...> format, Args&&... args) {
  if (log_enabled(LogLevel::kTrace))
    log_message(LogLevel::kTrace, fmt::format(format, std::forward<Args>(args)...));
}
template <typename... Args>
void log_debug(fmt::format_string<Args...> format, Args&&... args) {
  if (log_enabled(LogLevel::kDebug))
    log_message(LogLevel::kDebug, fmt::format(format, std::forward<Args>(args)...));
}
template <typename... Args>
void log_info(fmt::format_string<Args...> format, Args&&... args) {
  if (log_enabled(LogLevel::kInfo))
    log_message(LogLevel::kInfo, fmt::format(format, std::forward<Args>(args)...));
}
template <typename... Args>
void log_warn(fmt::format_string<Args...> format, Args&&... args) {
  if (log_enabled(LogLevel::kWarn))
    log_message(LogLevel::kWarn, fmt::format(format, std::forward<Args>(args)...));
}
template <typename... Args>
void log_error(fmt::format_string<Args...> format, Args&&... args) {
  if (log_enabled(LogLevel::kError))
    log_message(LogLevel::kError, fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace rota::io
