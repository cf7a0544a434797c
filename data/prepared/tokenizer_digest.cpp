// Tokenizer identity digests (see tokenizer_digest.h).
#include "data/prepared/tokenizer_digest.h"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "data/util/sha256.h"
#include "framework/base/error.h"
#include "framework/base/file_io.h"
#include "framework/base/scratch_directory.h"

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
  const ScratchDirectory dir(kTokenizerDigestScratchPrefix);
  tokenizer.save(dir.path());
  return tokenizer_dir_digest(dir.path());
}

}  // namespace rota::data
