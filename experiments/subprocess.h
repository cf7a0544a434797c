// Child processes for `rota ablate`: run a command with its output in files, forward a stop.
#pragma once

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace rota::experiments {

/// A command to run: the program (a path; not searched on PATH), its arguments (argv[0]
/// included), extra environment variables (set or replaced; the rest is inherited), and where
/// stdout and stderr go (appended; created when missing; the same file for both is fine).
struct ChildCommand {
  std::string program;
  std::vector<std::string> argv;
  std::vector<std::pair<std::string, std::string>> env;
  std::filesystem::path stdout_path;
  std::filesystem::path stderr_path;
};

/// How a child ended.
struct ChildExit {
  int exit_code = -1;       // the exit status, or -1 when killed by a signal or never started
  int signal = 0;           // the signal that killed it, or 0
  std::string start_error;  // why it could not be started (empty when it ran)
  bool ok() const { return exit_code == 0; }
  /// "exit code 1", "killed by SIGKILL", or "could not start: ...".
  std::string describe() const;
};

/// Runs `command` to completion and returns how it ended. The child runs in its own process
/// group (a Ctrl-C on the terminal reaches only `rota ablate`, which forwards it once) and is
/// sent SIGTERM if the thread that started it dies first (so no orphan keeps training).
/// While it runs, `stop_signal()` is polled: when it becomes non-zero, that signal is forwarded
/// to the child once (a train child then checkpoints and stops), and again if it changes.
ChildExit run_child(const ChildCommand& command, int (*stop_signal)() = nullptr);

/// Shell-style quoting of one argument for printing a command a user can paste.
std::string shell_quote(const std::string& argument);
/// The argv as one pasteable line.
std::string command_line(const std::vector<std::string>& argv);

/// The executable named `name` on $PATH, or an empty path.
std::filesystem::path find_on_path(const std::string& name);

}  // namespace rota::experiments
