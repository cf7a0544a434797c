// train.log: whole lines only; a line that cannot be written stops file logging without throwing.
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include <gtest/gtest.h>

#include "framework/io/log.h"
#include "tests/framework/io/io_test_util.h"

namespace rota::io {
namespace ROTA_TEST_FILE_NS {

using testing::read_bytes;
using testing::TempDir;

TEST(LogFile, LinesAreAppendedWhole) {
  TempDir dir;
  const auto path = dir / "run" / "train.log";
  {
    const LogFileScope scope(path);
    log_to_file(LogLevel::kInfo, "first");
    log_to_file(LogLevel::kInfo, "second");
  }
  const std::string text = read_bytes(path);
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.back(), '\n');
  EXPECT_NE(text.find("INFO  first\n"), std::string::npos) << text;
  EXPECT_NE(text.find("INFO  second\n"), std::string::npos) << text;
}

// A full disk (a 1500-byte file-size limit in a child process): logging goes on without an
// exception, the file ends with a whole line, and the console names the file and the error once.
TEST(LogFile, AFailedLineIsRolledBackAndFileLoggingStops) {
  TempDir dir;
  const auto path = dir / "train.log";
  int console_pipe[2];  // the console: a pipe, which the file-size limit does not cover
  ASSERT_EQ(::pipe(console_pipe), 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(console_pipe[0]);
    ::signal(SIGXFSZ, SIG_IGN);
    std::FILE* console = ::fdopen(console_pipe[1], "w");
    if (console == nullptr) ::_exit(4);
    set_log_console(console);
    rlimit limit{1500, 1500};
    if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) ::_exit(3);
    try {
      const LogFileScope scope(path);
      for (int i = 0; i < 200; ++i) log_message(LogLevel::kWarn, "line " + std::to_string(i));
    } catch (...) {
      ::_exit(2);  // logging threw
    }
    std::fclose(console);
    ::_exit(0);
  }
  ::close(console_pipe[1]);
  std::string console;
  char buffer[4096];
  ssize_t n;
  while ((n = ::read(console_pipe[0], buffer, sizeof(buffer))) > 0) {
    console.append(buffer, static_cast<size_t>(n));
  }
  ::close(console_pipe[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0) << "2: threw; 3: setrlimit; 4: console stream";
  const std::string text = read_bytes(path);
  ASSERT_FALSE(text.empty());
  EXPECT_LE(text.size(), 1500u);
  EXPECT_EQ(text.back(), '\n');
  EXPECT_NE(console.find("line 199\n"), std::string::npos);  // the console kept every line
  const size_t error = console.find("log file: append to " + path.string());
  ASSERT_NE(error, std::string::npos) << console;
  EXPECT_NE(console.find("File too large", error), std::string::npos) << console;
  EXPECT_EQ(console.find("log file:", error + 1), std::string::npos) << "reported more than once";
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::io
