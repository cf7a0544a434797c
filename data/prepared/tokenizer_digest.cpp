// Tokenizer identity digests (see tokenizer_digest.h).
#include "data/prepared/tokenizer_digest.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <vector>

#include <fmt/format.h>

#include "data/util/sha256.h"
#include "framework/base/error.h"
#include "framework/base/file_io.h"

namespace fs = std::filesystem;

namespace rota::data {

std::string tokenizer_dir_digest(const fs::path& dir) {
  ROTA_CHECK(fs::is_directory(dir), "data: no tokenizer directory {}", dir.string());
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.is_regular_file()) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  Sha256 hash;
  for (const fs::path& file : files) {
    const std::string bytes = read_file(file);
    const std::string name = file.filename().string();
    hash.update(name.data(), name.size() + 1);  // with its '\0'
    const std::string size = std::to_string(bytes.size());
    hash.update(size.data(), size.size() + 1);
    hash.update(bytes);
  }
  return hash.hex_digest();
}

std::string tokenizer_digest(const Tokenizer& tokenizer) {
  static std::atomic<int64_t> counter{0};
  const fs::path dir =
      fs::temp_directory_path() / fmt::format("rota-digest-{}-{}", ::getpid(), counter++);
  fs::remove_all(dir);
  struct Remove {
    fs::path dir;
    ~Remove() {
      std::error_code ignored;
      fs::remove_all(dir, ignored);
    }
  } remove{dir};
  tokenizer.save(dir);
  return tokenizer_dir_digest(dir);
}

}  // namespace rota::data
