// Whole-record appends with rollback on failure (see append_file.h).
#include "framework/base/append_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "framework/base/error.h"

namespace rota {

AppendFile::AppendFile(std::filesystem::path path) : path_(std::move(path)) {
  if (path_.has_parent_path()) {
    std::error_code error;
    std::filesystem::create_directories(path_.parent_path(), error);
    if (error) fail("cannot create {}: {}", path_.parent_path().string(), error.message());
  }
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) fail("cannot open {} for appending: {}", path_.string(), std::strerror(errno));
}

AppendFile::~AppendFile() {
  if (fd_ >= 0) ::close(fd_);
}

void AppendFile::append(std::string_view record) {
  struct stat before {};
  if (::fstat(fd_, &before) != 0) {
    fail("append to {}: cannot stat it: {}", path_.string(), std::strerror(errno));
  }
  size_t done = 0;
  while (done < record.size()) {
    const ssize_t written = ::write(fd_, record.data() + done, record.size() - done);
    if (written > 0) {
      done += static_cast<size_t>(written);
      continue;
    }
    if (written < 0 && errno == EINTR) continue;
    const int saved = written < 0 ? errno : EIO;  // write() returning 0 for a regular file: EIO
    // Roll back the part of the record that did reach the file.
    const bool rolled_back = done == 0 || ::ftruncate(fd_, before.st_size) == 0;
    fail("append to {}: {} ({} of {} bytes of a record written; {})", path_.string(),
         std::strerror(saved), done, record.size(),
         rolled_back ? "the file still ends with its last whole record"
                     : fmt::format("truncating it back to {} bytes failed too: {}",
                                   static_cast<int64_t>(before.st_size), std::strerror(errno)));
  }
}

}  // namespace rota
