// Read-only memory mapping of a whole file.
#include "framework/base/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "framework/base/error.h"

namespace rota {

MappedFile::MappedFile(const std::filesystem::path& path) : path_(path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail("cannot open {}: {}", path.string(), std::strerror(errno));
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    const int error = errno;
    ::close(fd);
    fail("stat {}: {}", path.string(), std::strerror(error));
  }
  if (!S_ISREG(info.st_mode)) {
    ::close(fd);
    fail("{}: not a regular file", path.string());
  }
  size_ = static_cast<size_t>(info.st_size);
  if (size_ > 0) {
    data_ = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (data_ == MAP_FAILED) {
      const int error = errno;
      data_ = nullptr;
      ::close(fd);
      fail("mmap {}: {}", path.string(), std::strerror(error));
    }
  }
  // The mapping stays valid after the descriptor is closed.
  ::close(fd);
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(data_, size_);
}

}  // namespace rota
