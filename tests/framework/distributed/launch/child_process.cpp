// Child processes for the launch tests (see child_process.h).
#include "tests/framework/distributed/launch/child_process.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <iterator>
#include <thread>

extern char** environ;

namespace rota::testing {
namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

bool is_launcher_variable(const std::string& entry) {
  for (const char* prefix : {"OMPI_", "PMI_", "PMIX_", "MV2_"}) {
    if (entry.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Parent pid of `pid` from /proc/<pid>/stat, or -1.
pid_t parent_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return -1;
  char state;
  int ppid = -1;
  if (std::sscanf(stat.c_str() + close + 1, " %c %d", &state, &ppid) != 2) return -1;
  return ppid;
}

}  // namespace

ChildProcess::ChildProcess(const std::vector<std::string>& argv,
                           const std::map<std::string, std::string>& env,
                           const std::filesystem::path& output_file)
    : output_file_(output_file) {
  std::vector<std::string> environment;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    const std::string name = entry.substr(0, entry.find('='));
    if (!is_launcher_variable(entry) && env.count(name) == 0) environment.push_back(entry);
  }
  for (const auto& [name, value] : env) environment.push_back(name + "=" + value);
  std::vector<char*> args, envp;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (const std::string& e : environment) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  started_ = now_s();
  pid_ = ::fork();
  if (pid_ == 0) {
    ::setpgid(0, 0);
    const int fd = ::open(output_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::close(fd);
    ::execvpe(args[0], args.data(), envp.data());
    std::fprintf(stderr, "cannot run %s: %s\n", args[0], std::strerror(errno));
    ::_exit(127);
  }
  ::setpgid(pid_, pid_);
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0 && !reaped_) {
    ::kill(-pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

ChildResult ChildProcess::wait(double timeout_s) {
  ChildResult result;
  int status = 0;
  while (true) {
    const pid_t done = ::waitpid(pid_, &status, WNOHANG);
    if (done == pid_) break;
    if (now_s() - started_ > timeout_s) {
      result.timed_out = true;
      ::kill(-pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  reaped_ = true;
  result.seconds = now_s() - started_;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.output = read_text(output_file_);
  return result;
}

pid_t ChildProcess::rank_pid(int rank) const {
  const std::string wanted = "OMPI_COMM_WORLD_RANK=" + std::to_string(rank);
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(name));
    // A descendant of the launcher?
    pid_t up = pid;
    for (int depth = 0; depth < 4 && up > 1 && up != pid_; ++depth) up = parent_of(up);
    if (up != pid_ || pid == pid_) continue;
    const std::string environment = read_text(entry.path() / "environ");
    size_t at = 0;
    while (at < environment.size()) {
      const size_t end = environment.find('\0', at);
      if (environment.compare(at, end - at, wanted) == 0) return pid;
      if (end == std::string::npos) break;
      at = end + 1;
    }
  }
  return -1;
}

ChildResult run_child(const std::vector<std::string>& argv,
                      const std::map<std::string, std::string>& env,
                      const std::filesystem::path& output_file, double timeout_s) {
  ChildProcess child(argv, env, output_file);
  return child.wait(timeout_s);
}

}  // namespace rota::testing
