// Temporary directories for tests (see temp_dir.h).
#include "tests/support/temp_dir.h"

#include <stdlib.h>

#include <gtest/gtest.h>

namespace rota::testing {

namespace {

std::filesystem::path default_temp_base() {
  std::error_code error;
  const std::filesystem::path base = std::filesystem::temp_directory_path(error);
  return error ? std::filesystem::path("/tmp") : base;
}

}  // namespace

TempDir::TempDir() : TempDir(default_temp_base()) {}

TempDir::TempDir(const std::filesystem::path& base) {
  std::string pattern = (base / "rota_test_XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) ADD_FAILURE() << "mkdtemp failed for " << pattern;
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::filesystem::path memory_temp_base() {
  return std::filesystem::is_directory("/dev/shm") ? std::filesystem::path("/dev/shm")
                                                   : default_temp_base();
}

}  // namespace rota::testing
