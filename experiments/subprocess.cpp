// Child processes for `rota ablate` (see subprocess.h): fork + exec with output in files.
#include "experiments/subprocess.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>
#include <thread>

#include <fmt/format.h>

extern char** environ;

namespace rota::experiments {

namespace {

/// The inherited environment with `overrides` set or replaced, as "KEY=VALUE" strings.
std::vector<std::string> merged_environment(
    const std::vector<std::pair<std::string, std::string>>& overrides) {
  std::map<std::string, std::string> replaced(overrides.begin(), overrides.end());
  std::vector<std::string> result;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string text = *entry;
    const std::string key = text.substr(0, text.find('='));
    if (!replaced.contains(key)) result.push_back(text);
  }
  for (const auto& [key, value] : replaced) result.push_back(key + "=" + value);
  return result;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> result;
  for (std::string& s : strings) result.push_back(s.data());
  result.push_back(nullptr);
  return result;
}

int open_for_append(const std::filesystem::path& path) {
  // O_CLOEXEC: other threads start children too; only dup2 (in the intended child) keeps it.
  return ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
}

std::string signal_name(int signal) {
  const char* name = ::sigabbrev_np(signal);
  return name != nullptr ? std::string("SIG") + name : "signal " + std::to_string(signal);
}

}  // namespace

std::string ChildExit::describe() const {
  if (!start_error.empty()) return "could not start: " + start_error;
  if (signal != 0) return "killed by " + signal_name(signal);
  return "exit code " + std::to_string(exit_code);
}

ChildExit run_child(const ChildCommand& command, int (*stop_signal)()) {
  ChildExit result;
  // Everything the child needs is prepared before fork(): between fork and exec a child of a
  // multi-threaded process may only make async-signal-safe calls (no allocation).
  std::vector<std::string> argv = command.argv;
  std::vector<std::string> env = merged_environment(command.env);
  std::vector<char*> argv_ptrs = pointers(argv);
  std::vector<char*> env_ptrs = pointers(env);
  const int out_fd = open_for_append(command.stdout_path);
  if (out_fd < 0) {
    result.start_error =
        fmt::format("cannot open {}: {}", command.stdout_path.string(), std::strerror(errno));
    return result;
  }
  const bool same_file = command.stderr_path == command.stdout_path;
  const int err_fd = same_file ? out_fd : open_for_append(command.stderr_path);
  if (err_fd < 0) {
    result.start_error =
        fmt::format("cannot open {}: {}", command.stderr_path.string(), std::strerror(errno));
    ::close(out_fd);
    return result;
  }
  // exec failures come back through a close-on-exec pipe: EOF means exec succeeded.
  int report[2];
  if (::pipe2(report, O_CLOEXEC) != 0) {
    result.start_error = fmt::format("pipe: {}", std::strerror(errno));
    ::close(out_fd);
    if (!same_file) ::close(err_fd);
    return result;
  }
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(127);  // the parent died before prctl took effect
    const int null_fd = ::open("/dev/null", O_RDONLY);
    if (null_fd >= 0) ::dup2(null_fd, 0);
    ::dup2(out_fd, 1);
    ::dup2(err_fd, 2);
    // The signal dispositions rota ablate installed must not leak into the child.
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGTERM, SIG_DFL);
    ::execve(command.program.c_str(), argv_ptrs.data(), env_ptrs.data());
    const int error = errno;
    [[maybe_unused]] ssize_t ignored = ::write(report[1], &error, sizeof error);
    ::_exit(127);
  }
  ::close(report[1]);
  ::close(out_fd);
  if (!same_file) ::close(err_fd);
  if (pid < 0) {
    result.start_error = fmt::format("fork: {}", std::strerror(errno));
    ::close(report[0]);
    return result;
  }
  int exec_error = 0;
  ssize_t got;
  do {
    got = ::read(report[0], &exec_error, sizeof exec_error);
  } while (got < 0 && errno == EINTR);
  ::close(report[0]);

  int forwarded = 0;
  while (true) {
    int status = 0;
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) {
      if (got == static_cast<ssize_t>(sizeof exec_error)) {
        result.start_error =
            fmt::format("cannot execute {}: {}", command.program, std::strerror(exec_error));
      } else if (WIFEXITED(status)) {
        result.exit_code = WEXITSTATUS(status);
      } else if (WIFSIGNALED(status)) {
        result.signal = WTERMSIG(status);
      }
      return result;
    }
    if (done < 0 && errno != EINTR) {
      result.start_error = fmt::format("waitpid: {}", std::strerror(errno));
      return result;
    }
    if (stop_signal != nullptr) {
      const int requested = stop_signal();
      if (requested != 0 && requested != forwarded) {
        ::kill(pid, requested);
        forwarded = requested;
      }
    }
    // Polling keeps the wait interruptible by a stop request without signal plumbing; 50 ms is
    // nothing next to a training run.
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

std::string shell_quote(const std::string& argument) {
  if (!argument.empty() &&
      argument.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOP"
                                 "QRSTUVWXYZ0123456789_-./=:,+@%") == std::string::npos) {
    return argument;
  }
  std::string quoted = "'";
  for (char c : argument) {
    if (c == '\'') {
      quoted += "'\\''";
    } else {
      quoted += c;
    }
  }
  return quoted + "'";
}

std::string command_line(const std::vector<std::string>& argv) {
  std::string line;
  for (const std::string& argument : argv) {
    if (!line.empty()) line += ' ';
    line += shell_quote(argument);
  }
  return line;
}

std::filesystem::path find_on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return {};
  std::istringstream directories(path);
  for (std::string directory; std::getline(directories, directory, ':');) {
    if (directory.empty()) continue;
    const std::filesystem::path candidate = std::filesystem::path(directory) / name;
    struct stat info {};
    if (::stat(candidate.c_str(), &info) == 0 && S_ISREG(info.st_mode) &&
        ::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
  }
  return {};
}

}  // namespace rota::experiments
