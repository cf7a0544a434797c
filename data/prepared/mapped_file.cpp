// Read-only mmap of a whole file.
#include "data/prepared/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "framework/base/error.h"

namespace rota::data {

MappedFile::MappedFile(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ROTA_CHECK(fd >= 0, "data: cannot open {}: {}", path.string(), std::strerror(errno));
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    const int error = errno;
    ::close(fd);
    fail("data: cannot stat {}: {}", path.string(), std::strerror(error));
  }
  size_ = static_cast<size_t>(info.st_size);
  if (size_ > 0) {
    void* mapped = ::mmap(nullptr, size_, PROT_READ, MAP_SHARED, fd, 0);
    const int error = errno;
    ::close(fd);
    ROTA_CHECK(mapped != MAP_FAILED, "data: cannot map {} ({} bytes): {}", path.string(), size_,
               std::strerror(error));
    data_ = mapped;
  } else {
    ::close(fd);
  }
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(data_, size_);
}

}  // namespace rota::data
