// Starting a command (e.g. mpirun ... rota train) from a test: output captured, a time limit,
// the process ids of its children (the ranks) for signalling one of them.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace rota::testing {

struct ChildResult {
  int exit_code = -1;  // the exit status, or 128 + signal when killed
  bool timed_out = false;
  double seconds = 0;
  std::string output;  // stdout and stderr, interleaved
};

/// A started command in its own process group.
class ChildProcess {
 public:
  /// Starts argv[0] (looked up in PATH) with `env` added to this process's environment and the
  /// launcher variables (OMPI_*, PMI_*, PMIX_*) removed, so a test run under mpirun starts clean.
  ChildProcess(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
               const std::filesystem::path& output_file);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  /// Waits for the end, at most `timeout_s`; then kills the whole group and reports timed_out.
  ChildResult wait(double timeout_s);
  /// The pid of the MPI rank `rank` among this process's descendants (found through
  /// /proc/<pid>/environ's OMPI_COMM_WORLD_RANK), or -1.
  pid_t rank_pid(int rank) const;

 private:
  pid_t pid_ = -1;
  std::filesystem::path output_file_;
  double started_ = 0;
  bool reaped_ = false;
};

/// Runs a command to its end (at most timeout_s).
ChildResult run_child(const std::vector<std::string>& argv,
                      const std::map<std::string, std::string>& env,
                      const std::filesystem::path& output_file, double timeout_s);

}  // namespace rota::testing
