// Running the built `rota` program from tests: where it is, and a command's exit code and output.
#pragma once

#include <sys/types.h>

#include <string>

namespace rota::testing {

/// The `rota` executable of this build: next to the tests/ directory of the running test.
std::string built_rota();

/// What a shell command printed (stdout and stderr together) and its exit code (-1 when it did
/// not exit normally or could not be started).
struct CommandResult {
  int code = -1;
  std::string output;
};

/// Runs `command_line` through the shell with stderr folded into stdout.
CommandResult run_command(const std::string& command_line);

/// The pid of a process that has exited and been reaped: a holder that is certainly gone.
pid_t dead_pid();

}  // namespace rota::testing
