// Whole-file reads and atomic writes.
#include "data/util/file_io.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "framework/tensor/error.h"

namespace rota::data {

std::string read_file(const std::filesystem::path& path) {
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  ROTA_CHECK(file != nullptr, "data: cannot read {}: {}", path.string(), std::strerror(errno));
  std::string bytes;
  char block[1 << 16];
  size_t got;
  while ((got = std::fread(block, 1, sizeof(block), file.get())) > 0) bytes.append(block, got);
  ROTA_CHECK(!std::ferror(file.get()), "data: read error on {}", path.string());
  return bytes;
}

void write_file_atomic(const std::filesystem::path& path, std::string_view bytes) {
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
  const std::filesystem::path temp = path.string() + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ROTA_CHECK(fd >= 0, "data: cannot write {}: {}", temp.string(), std::strerror(errno));
  size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int error = errno;
      ::close(fd);
      ::unlink(temp.c_str());
      fail("data: write error on {}: {}", temp.string(), std::strerror(error));
    }
    written += static_cast<size_t>(n);
  }
  const bool synced = ::fsync(fd) == 0;
  ::close(fd);
  if (!synced || std::rename(temp.c_str(), path.c_str()) != 0) {
    const int error = errno;
    ::unlink(temp.c_str());
    fail("data: cannot move {} into place: {}", path.string(), std::strerror(error));
  }
}

}  // namespace rota::data
