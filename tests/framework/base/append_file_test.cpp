// AppendFile: whole records only; a failed append (here a file-size limit) rolls the file back.
#include "framework/base/append_file.h"

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include <gtest/gtest.h>

#include "framework/base/error.h"
#include "framework/base/file_io.h"
#include "tests/support/temp_dir.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

namespace fs = std::filesystem;

TEST(AppendFile, AppendsRecordsToNewAndExistingFiles) {
  const testing::TempDir tmp;
  const fs::path path = tmp / "sub" / "metrics.jsonl";
  {
    AppendFile file(path);
    file.append("{\"step\":1}\n");
    file.append("{\"step\":2}\n");
  }
  {
    AppendFile file(path);  // reopening appends, never truncates
    file.append("{\"step\":3}\n");
  }
  EXPECT_EQ(read_file(path), "{\"step\":1}\n{\"step\":2}\n{\"step\":3}\n");
}

// In a child process (the limit and the ignored SIGXFSZ stay there): appends 64-byte records to
// a file limited to 1000 bytes. The 16th record gets 40 bytes in before EFBIG; the child exits 0
// when append threw an Error naming the file and the partial write. Returns the child's status.
int append_until_the_limit(const fs::path& path, const fs::path& message_file) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::signal(SIGXFSZ, SIG_IGN);
    rlimit limit{1000, 1000};
    if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) ::_exit(3);
    try {
      AppendFile file(path);
      for (int i = 0; i < 100; ++i) {
        std::string record = "record " + std::to_string(i);
        record.resize(63, '.');
        file.append(record + "\n");
      }
    } catch (const Error& e) {
      const std::string message = e.what();
      try {
        AppendFile out(message_file);
        out.append(message);
      } catch (...) {
        ::_exit(4);
      }
      ::_exit(0);
    }
    ::_exit(2);  // never refused
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

TEST(AppendFile, AFailedWriteLeavesTheFileEndingWithAWholeRecord) {
  const testing::TempDir tmp;
  const fs::path path = tmp / "metrics.jsonl";
  const int status = append_until_the_limit(path, tmp / "message");
  ASSERT_TRUE(WIFEXITED(status)) << status;
  ASSERT_EQ(WEXITSTATUS(status), 0);
  const std::string content = read_file(path);
  EXPECT_EQ(content.size(), 15u * 64u);  // 15 whole records; the 16th's 40 bytes rolled back
  ASSERT_FALSE(content.empty());
  EXPECT_EQ(content.back(), '\n');
  EXPECT_EQ(content.substr(14 * 64, 9), "record 14");
  const std::string message = read_file(tmp / "message");
  EXPECT_NE(message.find(path.string()), std::string::npos) << message;
  EXPECT_NE(message.find("File too large"), std::string::npos) << message;
  EXPECT_NE(message.find("40 of 64 bytes"), std::string::npos) << message;
  EXPECT_NE(message.find("still ends with its last whole record"), std::string::npos) << message;
}

TEST(AppendFile, AnUnopenableFileIsAnErrorNamingIt) {
  const testing::TempDir tmp;
  fs::create_directories(tmp / "dir");
  try {
    AppendFile file(tmp / "dir");
    FAIL() << "opened a directory for appending";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find((tmp / "dir").string()), std::string::npos) << e.what();
  }
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
