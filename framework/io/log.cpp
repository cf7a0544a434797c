// Leveled logger: level from ROTA_LOG_LEVEL, timestamped lines to the console and train.log.
#include "framework/io/log.h"

#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <mutex>
#include <string>

#include "framework/base/append_file.h"
#include "framework/base/error.h"

namespace rota::io {
namespace {

// Plain std::FILE streams under one mutex: log lines are rare (not per element), so a lock
// per line costs nothing and keeps lines whole when OpenMP threads or data workers log.
struct LoggerState {
  std::mutex mutex;
  std::atomic<LogLevel> level{LogLevel::kInfo};
  std::FILE* console = stderr;
  std::unique_ptr<AppendFile> file;  // whole lines; a failed one is rolled back
  std::filesystem::path file_path;
  StatusLine* status = nullptr;
};

LoggerState& state() {
  static LoggerState* logger = new LoggerState();  // never destroyed: usable during exit
  return *logger;
}

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

LogLevel parse_log_level(std::string_view name) {
  std::string lower;
  for (char c : name)
    lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  if (lower == "trace") return LogLevel::kTrace;
  if (lower == "debug") return LogLevel::kDebug;
  if (lower == "info") return LogLevel::kInfo;
  if (lower == "warn" || lower == "warning") return LogLevel::kWarn;
  if (lower == "error") return LogLevel::kError;
  if (lower == "off") return LogLevel::kOff;
  fail("unknown log level '{}' (expected trace, debug, info, warn, error or off)", name);
}

const char* log_level_name(LogLevel level) {
  switch (level) {
    case LogLevel::kTrace:
      return "trace";
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarn:
      return "warn";
    case LogLevel::kError:
      return "error";
    case LogLevel::kOff:
      return "off";
  }
  return "?";
}

void set_log_level(LogLevel level) {
  state().level.store(level);
}
LogLevel log_level() {
  return state().level.load(std::memory_order_relaxed);
}

void init_logging_from_env() {
  const char* value = std::getenv("ROTA_LOG_LEVEL");
  if (value == nullptr || *value == '\0') return;
  try {
    set_log_level(parse_log_level(value));
  } catch (const Error& e) {
    fail("ROTA_LOG_LEVEL: {}", e.what());
  }
}

void set_log_file(const std::filesystem::path& path) {
  LoggerState& logger = state();
  {
    std::lock_guard lock(logger.mutex);
    if (path == logger.file_path) return;
  }
  std::unique_ptr<AppendFile> file;
  if (!path.empty()) {
    try {
      file = std::make_unique<AppendFile>(path);
    } catch (const Error& e) {
      fail("cannot open log file {}: {}", path.string(), e.what());
    }
  }
  std::lock_guard lock(logger.mutex);
  logger.file = std::move(file);
  logger.file_path = path;
}

std::filesystem::path log_file() {
  LoggerState& logger = state();
  std::lock_guard lock(logger.mutex);
  return logger.file_path;
}

LogFileScope::LogFileScope(const std::filesystem::path& path) : previous_(log_file()) {
  set_log_file(path);
}

LogFileScope::~LogFileScope() {
  try {
    set_log_file(previous_);
  } catch (const std::exception&) {
    set_log_file({});  // the earlier file cannot be reopened: stop file logging
  }
}

void set_log_console(std::FILE* stream) {
  LoggerState& logger = state();
  std::lock_guard lock(logger.mutex);
  logger.console = stream;
}

void set_log_status_line(StatusLine* status) {
  LoggerState& logger = state();
  std::lock_guard lock(logger.mutex);
  logger.status = status;
}

namespace {

// Appends a line to the log file (the mutex held). Logging never throws: when the line cannot be
// written (a full disk), it is rolled back, so the file ends with a whole line, file logging stops
// and the console says why once; the console keeps every line.
void append_to_log_file(LoggerState& logger, const std::string& line) {
  if (logger.file == nullptr) return;
  try {
    logger.file->append(line);
  } catch (const std::exception& e) {
    logger.file.reset();
    logger.file_path.clear();
    if (logger.console != nullptr) {
      const std::string warning =
          format_log_line(LogLevel::kError,
                          std::string("log file: ") + e.what() + "; no further lines go to it",
                          unix_now()) +
          "\n";
      std::fputs(warning.c_str(), logger.console);
      std::fflush(logger.console);
    }
  }
}

}  // namespace

std::string format_log_line(LogLevel level, std::string_view message, double unix_time) {
  const auto seconds = static_cast<std::time_t>(unix_time);
  const int millis = static_cast<int>((unix_time - static_cast<double>(seconds)) * 1000.0);
  std::tm local{};
  localtime_r(&seconds, &local);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%Y-%m-%d %H:%M:%S", &local);
  std::string name = log_level_name(level);
  for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return fmt::format("{}.{:03d} {:<5} {}", stamp, millis, name, message);
}

void log_message(LogLevel level, std::string_view message) {
  if (!log_enabled(level)) return;
  const std::string line = format_log_line(level, message, unix_now()) + "\n";
  LoggerState& logger = state();
  std::lock_guard lock(logger.mutex);
  if (logger.console != nullptr) {
    if (logger.status != nullptr) logger.status->clear_for_log();
    std::fputs(line.c_str(), logger.console);
    std::fflush(logger.console);
    if (logger.status != nullptr) logger.status->redraw_after_log();
  }
  append_to_log_file(logger, line);
}

void log_to_file(LogLevel level, std::string_view message) {
  const std::string line = format_log_line(level, message, unix_now()) + "\n";
  LoggerState& logger = state();
  std::lock_guard lock(logger.mutex);
  append_to_log_file(logger, line);
}

}  // namespace rota::io
