// Checkpoint directory writer (temporary directory, fsync, rename, pointer update) and reader.
#include "framework/io/checkpoint.h"

#include <fcntl.h>
#include <stdio.h>  // renameat2, RENAME_EXCHANGE (GNU)

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <memory>
#include <set>
#include <vector>

#include "framework/base/error.h"
#include "framework/base/file_io.h"
#include "framework/base/mapped_file.h"
#include "framework/io/checkpoint_paths.h"
#include "framework/io/crc32c.h"

namespace fs = std::filesystem;

namespace rota::io {
namespace {

bool is_standard_file(const std::string& name) {
  return name == kModelFile || name == kOptimizerFile || name == kStateFile || name == kRecipeFile;
}

void check_extra_file_name(const std::string& name) {
  ROTA_CHECK(!name.empty() && name.find('/') == std::string::npos && name != "." && name != ".." &&
                 !is_standard_file(name) && name.find(".tmp") == std::string::npos,
             "save_checkpoint: '{}' is not allowed as an extra file name", name);
}

// Size and CRC-32C of a file just written, read through a small buffer: mapping it would count
// the whole file in the process's resident memory (a checkpoint as large as the model).
FileCheck check_of(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  ROTA_CHECK(in.good(), "save_checkpoint: cannot read back {}", file.string());
  std::vector<char> buffer(size_t{1} << 20);
  uint64_t size = 0;
  uint32_t crc = 0;
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    const auto got = static_cast<size_t>(in.gcount());
    crc = crc32c(buffer.data(), got, crc);
    size += got;
  }
  ROTA_CHECK(in.eof(), "save_checkpoint: reading back {} failed", file.string());
  FileCheck check;
  check.set_name(file.filename().string());
  check.set_size(size);
  check.set_crc32c(crc);
  return check;
}

// Moves the finished temporary directory to its final name. An existing directory of that name
// (the same step saved again, e.g. after resuming from an earlier checkpoint) is swapped out
// atomically with renameat2(RENAME_EXCHANGE), so the name always refers to a complete
// checkpoint; filesystems without the exchange fall back to two renames.
void move_into_place(const fs::path& temp_dir, const fs::path& final_dir) {
  if (!fs::exists(final_dir)) {
    fs::rename(temp_dir, final_dir);
    return;
  }
  if (::renameat2(AT_FDCWD, temp_dir.c_str(), AT_FDCWD, final_dir.c_str(), RENAME_EXCHANGE) == 0) {
    fs::remove_all(temp_dir);  // now holds the replaced checkpoint
    return;
  }
  ROTA_CHECK(errno == EINVAL || errno == ENOSYS, "save_checkpoint: rename {} to {}: {}",
             temp_dir.string(), final_dir.string(), std::strerror(errno));
  const fs::path old_dir = final_dir.string() + ".deleting";
  fs::remove_all(old_dir);
  fs::rename(final_dir, old_dir);
  fs::rename(temp_dir, final_dir);
  fs::remove_all(old_dir);
}

// Maps a file of a checkpoint after checking that it exists, then checks it against what
// state.binpb recorded (size and CRC-32C).
std::unique_ptr<MappedFile> verified_file(const fs::path& checkpoint_dir, const FileCheck& check) {
  const std::string where = checkpoint_dir.string();
  const std::string& file = check.name();
  const fs::path path = checkpoint_dir / file;
  ROTA_CHECK(fs::exists(path), "checkpoint {}: missing {} (listed in state.binpb)", where, file);
  auto mapped = std::make_unique<MappedFile>(path);
  ROTA_CHECK(mapped->size() == check.size(),
             "checkpoint {}: {} has {} bytes but state.binpb recorded {} (truncated, or from "
             "another checkpoint)",
             where, file, mapped->size(), check.size());
  const uint32_t crc = crc32c(mapped->data(), mapped->size());
  ROTA_CHECK(crc == check.crc32c(),
             "checkpoint {}: {} has crc32c {:08x} but state.binpb recorded {:08x} (corrupted, "
             "or from another checkpoint)",
             where, file, crc, check.crc32c());
  return mapped;
}

// Base checkpoints followed from one checkpoint before giving up (a chain this long is a cycle).
constexpr int kMaxBaseDepth = 16;

// The tensors `base` names, read from the base checkpoint's model.safetensors (and from its own
// base, when it has one). `holder` is the checkpoint that refers to it, for the messages.
StateDict load_base_weights(const BaseWeights& base, const std::string& holder, int depth) {
  const fs::path dir = base.checkpoint();
  ROTA_CHECK(depth < kMaxBaseDepth,
             "checkpoint {}: more than {} base checkpoints in a chain (they refer to each other?)",
             holder, kMaxBaseDepth);
  ROTA_CHECK(!dir.empty() && fs::is_directory(dir),
             "checkpoint {}: holds only the tensors its run trained; the other {} (its frozen "
             "pretrained weights) are in {}, which is missing. Put that checkpoint back where it "
             "was, or keep a merged copy before moving it (`rota export hf`)",
             holder, base.names_size(), dir.string());
  const TrainState state =
      decode_train_state(read_file(dir / kStateFile), (dir / kStateFile).string());
  const FileCheck* model_check = nullptr;
  for (const FileCheck& check : state.files()) {
    if (check.name() == kModelFile) model_check = &check;
  }
  ROTA_CHECK(model_check != nullptr, "checkpoint {}: state.binpb has no check for {}", dir.string(),
             kModelFile);
  ROTA_CHECK(
      model_check->size() == base.model_size() && model_check->crc32c() == base.model_crc32c(),
      "checkpoint {}: its base {} has changed since the run started: its {} is now {} "
      "bytes with crc32c {:08x}, the run recorded {} bytes with crc32c {:08x} (the "
      "frozen weights the adapters were trained on are gone)",
      holder, dir.string(), kModelFile, model_check->size(), model_check->crc32c(),
      base.model_size(), base.model_crc32c());
  const std::unique_ptr<MappedFile> mapped = verified_file(dir, *model_check);
  const StateDict own = parse_safetensors(mapped->bytes(), (dir / kModelFile).string()).tensors;
  StateDict nested;
  if (state.has_base_weights()) {
    nested = load_base_weights(state.base_weights(), dir.string(), depth + 1);
  }
  StateDict out;
  for (const std::string& name : base.names()) {
    ROTA_CHECK(!out.contains(name), "checkpoint {}: base_weights lists {} twice", holder, name);
    if (own.contains(name)) {
      out.insert(name, own.at(name));
    } else {
      ROTA_CHECK(nested.contains(name),
                 "checkpoint {}: its base {} has no tensor {} (it was recorded as coming from "
                 "there)",
                 holder, dir.string(), name);
      out.insert(name, nested.at(name));
    }
  }
  return out;
}

}  // namespace

fs::path save_checkpoint(const fs::path& run_dir, const Checkpoint& checkpoint,
                         const CheckpointSaveOptions& options) {
  ROTA_CHECK(options.keep_last >= 0, "save_checkpoint: keep_last must be >= 0, got {}",
             options.keep_last);
  for (const auto& [name, unused] : checkpoint.extra_files) check_extra_file_name(name);
  const fs::path dir = checkpoints_dir(run_dir);
  const std::string name = checkpoint_dir_name(checkpoint.state.step());
  const fs::path final_dir = dir / name;
  const fs::path temp_dir = dir / (name + ".tmp");

  const bool created = fs::create_directories(dir);
  if (created) fsync_directory(dir.parent_path().empty() ? fs::path(".") : dir.parent_path());
  fs::remove_all(temp_dir);  // a leftover of an interrupted save of the same step
  fs::create_directory(temp_dir);

  save_safetensors(temp_dir / kModelFile, checkpoint.model, options.model_metadata);
  save_safetensors(temp_dir / kOptimizerFile, checkpoint.optimizer);
  write_file_atomically(temp_dir / kRecipeFile, checkpoint.recipe_text);
  for (const auto& [file, bytes] : checkpoint.extra_files) {
    write_file_atomically(temp_dir / file, bytes);
  }

  TrainState state = checkpoint.state;
  state.clear_files();
  *state.add_files() = check_of(temp_dir / kModelFile);
  *state.add_files() = check_of(temp_dir / kOptimizerFile);
  *state.add_files() = check_of(temp_dir / kRecipeFile);
  for (const auto& [file, unused] : checkpoint.extra_files) {
    *state.add_files() = check_of(temp_dir / file);
  }
  state.set_saved_unix_time(
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count());
  write_file_atomically(temp_dir / kStateFile, encode_train_state(state));
  fsync_directory(temp_dir);

  move_into_place(temp_dir, final_dir);
  fsync_directory(dir);
  write_checkpoint_pointer(run_dir, "latest", name);
  if (options.is_best) write_checkpoint_pointer(run_dir, "best", name);
  prune_checkpoints(run_dir, options.keep_last, name);
  return final_dir;
}

Checkpoint load_checkpoint(const fs::path& checkpoint_dir) {
  const std::string where = checkpoint_dir.string();
  ROTA_CHECK(fs::is_directory(checkpoint_dir), "checkpoint {}: not a directory", where);
  for (const char* file : {kModelFile, kOptimizerFile, kStateFile, kRecipeFile}) {
    ROTA_CHECK(fs::exists(checkpoint_dir / file), "checkpoint {}: missing {}", where, file);
  }
  Checkpoint checkpoint;
  checkpoint.state = decode_train_state(read_file(checkpoint_dir / kStateFile),
                                        (checkpoint_dir / kStateFile).string());

  std::set<std::string> checked;
  for (const FileCheck& check : checkpoint.state.files()) {
    const std::string& file = check.name();
    ROTA_CHECK(!file.empty() && file.find('/') == std::string::npos && file != kStateFile &&
                   checked.insert(file).second,
               "checkpoint {}: state.binpb lists an invalid file name '{}'", where, file);
    const fs::path path = checkpoint_dir / file;
    const std::unique_ptr<MappedFile> file_map = verified_file(checkpoint_dir, check);
    const MappedFile& mapped = *file_map;
    if (file == kModelFile) {
      checkpoint.model = parse_safetensors(mapped.bytes(), path.string()).tensors;
    } else if (file == kOptimizerFile) {
      const auto tensors = parse_safetensors(mapped.bytes(), path.string()).tensors;
      checkpoint.optimizer.assign(tensors.begin(), tensors.end());
    } else if (file == kRecipeFile) {
      checkpoint.recipe_text = std::string(mapped.bytes());
    } else {
      checkpoint.extra_files[file] = std::string(mapped.bytes());
    }
  }
  for (const char* file : {kModelFile, kOptimizerFile, kRecipeFile}) {
    ROTA_CHECK(checked.count(file) != 0, "checkpoint {}: state.binpb has no check for {}", where,
               file);
  }
  if (checkpoint.state.has_base_weights()) {
    const StateDict base = load_base_weights(checkpoint.state.base_weights(), where, 0);
    for (const auto& [name, tensor] : base) {
      ROTA_CHECK(!checkpoint.model.contains(name),
                 "checkpoint {}: {} is both in {} and listed as coming from its base", where, name,
                 kModelFile);
      checkpoint.model.insert(name, tensor);
    }
  }
  return checkpoint;
}

}  // namespace rota::io
