// Directory locks (see directory_lock.h): flock on DIR/.lock plus a record of the holder.
#include "framework/base/directory_lock.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <ctime>
#include <thread>

#include <fmt/format.h>

namespace fs = std::filesystem;

namespace rota {
namespace {

std::string host_name() {
  char buffer[256] = {};
  if (::gethostname(buffer, sizeof(buffer) - 1) != 0 || buffer[0] == '\0') return "localhost";
  return buffer;
}

std::string local_time_now() {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%Y-%m-%d %H:%M:%S", &local);
  return stamp;
}

// The lock file's bytes through our own descriptor (at most 4 KiB: a record is a few lines).
std::string read_record(int fd) {
  std::string text(4096, '\0');
  const ssize_t n = ::pread(fd, text.data(), text.size(), 0);
  text.resize(n > 0 ? static_cast<size_t>(n) : 0);
  return text;
}

// Whether `holder` names a live process we can see (same host, the PID exists).
bool names_live_process(const LockHolder& holder, const std::string& our_host) {
  if (holder.pid <= 0 || holder.pid > 0x7fffffff) return false;  // never a group or all (kill)
  if (holder.host != our_host) return true;  // cannot check another machine: believe it
  return ::kill(static_cast<pid_t>(holder.pid), 0) == 0 || errno == EPERM;
}

// The holder of a lock we were refused. The holder writes its record just after taking the
// lock, so a refusal that comes in between reads an empty or stale record: read again for a
// short while until it names a live process.
LockHolder wait_for_holder_record(int fd) {
  const std::string our_host = host_name();
  for (int attempt = 0; attempt < 50; ++attempt) {
    const LockHolder holder = parse_lock_holder(read_record(fd));
    if (names_live_process(holder, our_host)) return holder;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return LockHolder{};  // a stale record (a killed holder's) or none: name no one
}

std::string describe_holder(const LockHolder& holder) {
  if (holder.pid <= 0) return "another process (its lock file names no live process yet)";
  std::string text = holder.command.empty() ? "another process" : holder.command;
  text += fmt::format(" (pid {}", holder.pid);
  if (!holder.host.empty()) text += " on " + holder.host;
  if (!holder.since.empty()) text += " since " + holder.since;
  return text + ")";
}

}  // namespace

LockHolder parse_lock_holder(std::string_view text) {
  LockHolder holder;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    const size_t space = line.find(' ');
    if (space == std::string_view::npos) continue;
    const std::string_view key = line.substr(0, space);
    const std::string_view value = line.substr(space + 1);
    if (key == "pid") {
      long pid = 0;
      const auto result = std::from_chars(value.data(), value.data() + value.size(), pid);
      if (result.ec == std::errc() && result.ptr == value.data() + value.size() && pid > 0) {
        holder.pid = pid;
      }
    } else if (key == "host") {
      holder.host = value;
    } else if (key == "since") {
      holder.since = value;
    } else if (key == "command") {
      holder.command = value;
    }
  }
  return holder;
}

std::string format_lock_holder(const LockHolder& holder) {
  return fmt::format("pid {}\nhost {}\nsince {}\ncommand {}\n", holder.pid, holder.host,
                     holder.since, holder.command);
}

std::string current_command_line() {
  std::string args;
  const int fd = ::open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    char buffer[4096];
    ssize_t n;
    while ((n = ::read(fd, buffer, sizeof(buffer))) > 0)
      args.append(buffer, static_cast<size_t>(n));
    ::close(fd);
  }
  while (!args.empty() && args.back() == '\0') args.pop_back();
  std::string line;
  size_t start = 0;
  for (bool first = true; start <= args.size(); first = false) {
    size_t end = args.find('\0', start);
    if (end == std::string::npos) end = args.size();
    std::string word = args.substr(start, end - start);
    if (first) word = fs::path(word).filename().string();  // the program's file name
    for (char& c : word) {
      if (static_cast<unsigned char>(c) < 0x20) c = ' ';  // one line in the record
    }
    if (!line.empty()) line += ' ';
    line += word;
    start = end + 1;
  }
  if (line.size() > 300) line = line.substr(0, 297) + "...";
  return line.empty() ? "unknown" : line;
}

DirectoryLock::DirectoryLock(const fs::path& dir, std::string_view advice)
    : dir_(dir), file_(dir / kLockFileName) {
  std::error_code error;
  fs::create_directories(dir_, error);
  if (error) fail("cannot create {}: {}", dir_.string(), error.message());
  fd_ = ::open(file_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) fail("cannot open the lock file {}: {}", file_.string(), std::strerror(errno));
  while (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    const int saved = errno;
    if (saved == EWOULDBLOCK) {
      const LockHolder holder = wait_for_holder_record(fd_);
      ::close(fd_);
      fd_ = -1;
      throw DirectoryBusyError(fmt::format("{} is in use by {}; {} (lock file {})", dir_.string(),
                                           describe_holder(holder), advice, file_.string()),
                               holder);
    }
    ::close(fd_);
    fd_ = -1;
    fail("cannot lock {}: {}", file_.string(), std::strerror(saved));
  }
  // Ours now: replace whatever an earlier holder left with this process's record.
  LockHolder me;
  me.pid = static_cast<long>(::getpid());
  me.host = host_name();
  me.since = local_time_now();
  me.command = current_command_line();
  const std::string record = format_lock_holder(me);
  if (::ftruncate(fd_, 0) != 0 ||
      ::pwrite(fd_, record.data(), record.size(), 0) != static_cast<ssize_t>(record.size())) {
    // Only the record failed (a full disk): the lock itself holds. A refused process then
    // reports "another process" instead of our PID.
  }
}

DirectoryLock::~DirectoryLock() {
  if (fd_ < 0) return;
  // Still holding the lock: clear the record so that it never names a finished process.
  [[maybe_unused]] const int ignored = ::ftruncate(fd_, 0);
  ::close(fd_);
}

}  // namespace rota
