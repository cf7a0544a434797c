// Tokenizer broadcast from rank 0 (see shared_tokenizer.h).
#include "app/run/shared_tokenizer.h"

#include "app/setup/tokenizer_setup.h"
#include "framework/base/error.h"

namespace rota::app {

std::string pack_files(const std::map<std::string, std::string>& files) {
  std::string packed;
  for (const auto& [name, bytes] : files) {
    packed += name + "\n" + std::to_string(bytes.size()) + "\n" + bytes;
  }
  return packed;
}

std::map<std::string, std::string> unpack_files(const std::string& packed) {
  std::map<std::string, std::string> files;
  size_t at = 0;
  while (at < packed.size()) {
    const size_t name_end = packed.find('\n', at);
    const size_t size_end =
        name_end == std::string::npos ? std::string::npos : packed.find('\n', name_end + 1);
    ROTA_CHECK(size_end != std::string::npos, "distributed: malformed tokenizer files from rank 0");
    const std::string name = packed.substr(at, name_end - at);
    const std::string size_text = packed.substr(name_end + 1, size_end - name_end - 1);
    ROTA_CHECK(!size_text.empty() && size_text.find_first_not_of("0123456789") == std::string::npos,
               "distributed: malformed tokenizer files from rank 0");
    const size_t size = std::stoull(size_text);
    ROTA_CHECK(size <= packed.size() - size_end - 1,
               "distributed: malformed tokenizer files from rank 0");
    files[name] = packed.substr(size_end + 1, size);
    at = size_end + 1 + size;
  }
  return files;
}

std::shared_ptr<const data::Tokenizer> shared_tokenizer(
    distributed::Communicator& comm, const recipes::Recipe& recipe,
    const std::optional<std::filesystem::path>& checkpoint_dir,
    const data::DataOptions& data_options) {
  if (comm.world_size() == 1) return obtain_tokenizer(recipe, checkpoint_dir, data_options);
  std::shared_ptr<const data::Tokenizer> tokenizer;
  std::string packed;
  if (comm.rank() == 0) {
    tokenizer = obtain_tokenizer(recipe, checkpoint_dir, data_options);
    packed = pack_files(tokenizer_files(*tokenizer));
  }
  packed = distributed::broadcast_string(comm, packed);
  if (comm.rank() != 0) tokenizer = tokenizer_from_files(unpack_files(packed));
  return tokenizer;
}

}  // namespace rota::app
