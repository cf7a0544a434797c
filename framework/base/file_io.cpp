// Whole-file reads and crash-safe writes (temporary file + fsync + rename + directory fsync).
#include "framework/base/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "framework/base/error.h"

namespace rota {
namespace {

std::string system_error() {
  return std::strerror(errno);
}

void fsync_fd(int fd, const std::filesystem::path& path) {
  // EINTR is retried; any other failure means the data may not be on disk, so it is an error.
  while (::fsync(fd) != 0) {
    if (errno != EINTR) fail("fsync {}: {}", path.string(), system_error());
  }
}

void fsync_path(const std::filesystem::path& path, int flags) {
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) fail("open {} for fsync: {}", path.string(), system_error());
  try {
    fsync_fd(fd, path);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
}

std::filesystem::path parent_or_dot(const std::filesystem::path& path) {
  const auto parent = path.parent_path();
  return parent.empty() ? std::filesystem::path(".") : parent;
}

}  // namespace

AtomicFileWriter::AtomicFileWriter(std::filesystem::path path)
    : path_(std::move(path)), temp_path_(path_.string() + ".tmp." + std::to_string(::getpid())) {
  fd_ = ::open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) fail("cannot create {}: {}", temp_path_.string(), system_error());
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(temp_path_.c_str());
  }
}

void AtomicFileWriter::write(const void* data, size_t size) {
  ROTA_CHECK(fd_ >= 0, "write {}: already committed", path_.string());
  const auto* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t written = ::write(fd_, p, size);
    if (written < 0) {
      if (errno == EINTR) continue;
      fail("write {}: {}", temp_path_.string(), system_error());
    }
    p += written;
    size -= static_cast<size_t>(written);
  }
}

void AtomicFileWriter::commit() {
  ROTA_CHECK(fd_ >= 0, "commit {}: already committed", path_.string());
  fsync_fd(fd_, temp_path_);
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) {
    ::unlink(temp_path_.c_str());
    fail("close {}: {}", temp_path_.string(), system_error());
  }
  if (::rename(temp_path_.c_str(), path_.c_str()) != 0) {
    const std::string error = system_error();
    ::unlink(temp_path_.c_str());
    fail("rename {} to {}: {}", temp_path_.string(), path_.string(), error);
  }
  fsync_directory(parent_or_dot(path_));
}

void write_file_atomically(const std::filesystem::path& path, std::string_view content) {
  AtomicFileWriter writer(path);
  writer.write(content);
  writer.commit();
}

std::string read_file(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail("cannot open {}: {}", path.string(), system_error());
  std::string bytes;
  struct stat info {};
  if (::fstat(fd, &info) == 0 && info.st_size > 0) bytes.reserve(static_cast<size_t>(info.st_size));
  char buffer[1 << 16];
  while (true) {
    const ssize_t got = ::read(fd, buffer, sizeof(buffer));
    if (got < 0) {
      if (errno == EINTR) continue;
      const std::string error = system_error();
      ::close(fd);
      fail("read {}: {}", path.string(), error);
    }
    if (got == 0) break;
    bytes.append(buffer, static_cast<size_t>(got));
  }
  ::close(fd);
  return bytes;
}

void fsync_directory(const std::filesystem::path& dir) {
  fsync_path(dir, O_RDONLY | O_DIRECTORY);
}

void fsync_directory_tree(const std::filesystem::path& dir) {
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.is_regular_file()) fsync_path(entry.path(), O_RDONLY);
  }
  fsync_directory(dir);
}

}  // namespace rota
