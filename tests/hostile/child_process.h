// The built `rota` started in the background (its own pid, output to a file), for tests that
// need two processes at once or a signal at a chosen moment.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/program.h"

namespace rota::testing {

class BackgroundRota {
 public:
  /// Starts `rota ARGS...` with stdout and stderr to `output` (and OMP_NUM_THREADS=1); with
  /// `file_size_limit` > 0, no file it writes may grow past that many bytes (RLIMIT_FSIZE, as
  /// `ulimit -f`): writes past it fail like writes to a full disk.
  BackgroundRota(const std::vector<std::string>& args, const std::filesystem::path& output,
                 long file_size_limit = 0)
      : output_(output) {
    const std::string program = built_rota();
    pid_ = ::fork();
    if (pid_ == 0) {
      const int fd = ::open(output.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (fd < 0) ::_exit(127);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      ::setenv("OMP_NUM_THREADS", "1", 1);
      if (file_size_limit > 0) {
        const rlimit limit{static_cast<rlim_t>(file_size_limit),
                           static_cast<rlim_t>(file_size_limit)};
        if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) ::_exit(126);
      }
      std::vector<char*> argv;
      argv.push_back(const_cast<char*>(program.c_str()));
      for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      ::execv(program.c_str(), argv.data());
      ::_exit(127);
    }
  }
  ~BackgroundRota() {
    if (pid_ > 0 && !exited_) {
      ::kill(pid_, SIGKILL);
      wait();
    }
  }
  BackgroundRota(const BackgroundRota&) = delete;
  BackgroundRota& operator=(const BackgroundRota&) = delete;

  pid_t pid() const { return pid_; }

  /// Whether it is still running (reaps it when it has exited).
  bool running() {
    if (exited_) return false;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      exited_ = true;
      status_ = status;
    }
    return !exited_;
  }
  /// Waits for the exit; the exit code, or -1 when killed by a signal.
  int wait() {
    if (!exited_) {
      ::waitpid(pid_, &status_, 0);
      exited_ = true;
    }
    return WIFEXITED(status_) ? WEXITSTATUS(status_) : -1;
  }
  void signal(int number) { ::kill(pid_, number); }
  std::string output() const {
    std::ifstream in(output_);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }

 private:
  std::filesystem::path output_;
  pid_t pid_ = -1;
  bool exited_ = false;
  int status_ = 0;
};

/// Polls `condition` every 20 ms for up to `seconds`; whether it became true.
inline bool wait_until(const std::function<bool()>& condition, double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return condition();
}

}  // namespace rota::testing
