// DirectoryLock: one holder at a time, the refusal names the holder, a dead holder never blocks.
#include "framework/base/directory_lock.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "framework/base/file_io.h"
#include "tests/support/program.h"
#include "tests/support/temp_dir.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

namespace fs = std::filesystem;

// A child process that takes the lock on `dir`, reports over a pipe, and waits to be killed.
struct LockingChild {
  pid_t pid = -1;
  explicit LockingChild(const fs::path& dir) {
    int ready[2];
    EXPECT_EQ(::pipe(ready), 0);
    pid = ::fork();
    if (pid == 0) {
      ::close(ready[0]);
      try {
        DirectoryLock lock(dir);
        const char ok = 'y';
        [[maybe_unused]] auto n = ::write(ready[1], &ok, 1);
        ::pause();
      } catch (...) {
      }
      ::_exit(1);
    }
    ::close(ready[1]);
    char got = 0;
    EXPECT_EQ(::read(ready[0], &got, 1), 1);
    ::close(ready[0]);
    EXPECT_EQ(got, 'y');
  }
  void kill() {
    if (pid <= 0) return;
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    pid = -1;
  }
  ~LockingChild() { kill(); }
};

TEST(DirectoryLock, CreatesTheDirectoryAndRecordsTheHolder) {
  const testing::TempDir tmp;
  const fs::path dir = tmp / "runs" / "x";
  const DirectoryLock lock(dir);
  EXPECT_TRUE(fs::is_directory(dir));
  EXPECT_EQ(lock.file(), dir / ".lock");
  const LockHolder holder = parse_lock_holder(read_file(dir / ".lock"));
  EXPECT_EQ(holder.pid, static_cast<long>(::getpid()));
  EXPECT_FALSE(holder.host.empty());
  EXPECT_FALSE(holder.since.empty());
  EXPECT_NE(holder.command.find("base_unit"), std::string::npos) << holder.command;
}

TEST(DirectoryLock, ASecondLockInThisProcessIsRefusedNamingOurPid) {
  const testing::TempDir tmp;
  const DirectoryLock first(tmp.path());
  try {
    DirectoryLock second(tmp.path(), "use another --out");
    FAIL() << "the second lock was granted";
  } catch (const DirectoryBusyError& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.find(tmp.path().string() + " is in use by "), 0u) << message;
    EXPECT_NE(message.find("(pid " + std::to_string(::getpid()) + " on "), std::string::npos)
        << message;
    EXPECT_NE(message.find("use another --out"), std::string::npos) << message;
    EXPECT_EQ(e.holder().pid, static_cast<long>(::getpid()));
  }
}

TEST(DirectoryLock, ReleasedOnDestructionWithTheRecordCleared) {
  const testing::TempDir tmp;
  { const DirectoryLock lock(tmp.path()); }
  EXPECT_EQ(read_file(tmp / ".lock"), "");  // the file stays; it names no one
  const DirectoryLock again(tmp.path());
  EXPECT_EQ(parse_lock_holder(read_file(tmp / ".lock")).pid, static_cast<long>(::getpid()));
}

TEST(DirectoryLock, AnotherProcessHoldingItIsNamedAndItsDeathReleasesIt) {
  const testing::TempDir tmp;
  LockingChild child(tmp.path());
  try {
    DirectoryLock mine(tmp.path());
    FAIL() << "granted while the child holds it";
  } catch (const DirectoryBusyError& e) {
    EXPECT_EQ(e.holder().pid, static_cast<long>(child.pid));
    EXPECT_NE(std::string(e.what()).find("(pid " + std::to_string(child.pid)), std::string::npos)
        << e.what();
  }
  const pid_t was = child.pid;
  child.kill();  // SIGKILL: no destructor ran, the record still names the child
  EXPECT_EQ(parse_lock_holder(read_file(tmp / ".lock")).pid, static_cast<long>(was));
  const DirectoryLock mine(tmp.path());  // the kernel released the flock
  EXPECT_EQ(parse_lock_holder(read_file(tmp / ".lock")).pid, static_cast<long>(::getpid()));
}

TEST(DirectoryLock, AStaleRecordNamingADeadProcessDoesNotBlock) {
  const testing::TempDir tmp;
  LockHolder stale;
  stale.pid = testing::dead_pid();
  stale.host = "somewhere";
  stale.command = "rota train old.txtpb";
  write_file_atomically(tmp / ".lock", format_lock_holder(stale));
  const DirectoryLock lock(tmp.path());
  EXPECT_EQ(parse_lock_holder(read_file(tmp / ".lock")).pid, static_cast<long>(::getpid()));
}

TEST(DirectoryLock, AnUncreatableDirectoryIsAnErrorNamingIt) {
  const testing::TempDir tmp;
  write_file_atomically(tmp / "file", "x");
  try {
    DirectoryLock lock(tmp / "file" / "run");
    FAIL() << "locked a directory under a file";
  } catch (const DirectoryBusyError&) {
    FAIL() << "reported as busy";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find((tmp / "file" / "run").string()), std::string::npos)
        << e.what();
  }
}

TEST(LockHolderRecord, RoundTripsAndToleratesGarbage) {
  LockHolder holder{1234, "host-a", "2026-01-02 03:04:05", "rota train a b --out c"};
  const LockHolder back = parse_lock_holder(format_lock_holder(holder));
  EXPECT_EQ(back.pid, 1234);
  EXPECT_EQ(back.host, "host-a");
  EXPECT_EQ(back.since, "2026-01-02 03:04:05");
  EXPECT_EQ(back.command, "rota train a b --out c");
  EXPECT_EQ(parse_lock_holder("").pid, 0);
  EXPECT_EQ(parse_lock_holder("pid -5\n").pid, 0);
  EXPECT_EQ(parse_lock_holder("pid 12x\nhost\n").pid, 0);
  EXPECT_EQ(parse_lock_holder(std::string("\0\xff pid 3", 8)).pid, 0);
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
