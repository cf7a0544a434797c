// The checkpoints/ folder of a run: naming, latest/best pointers, listing and pruning.
#include "framework/io/checkpoint_paths.h"

#include <algorithm>
#include <charconv>
#include <set>

#include <fmt/format.h>

#include "framework/base/error.h"
#include "framework/base/file_io.h"

namespace fs = std::filesystem;

namespace rota::io {
namespace {

constexpr char kStepPrefix[] = "step_";

// The step of a directory name "step_<digits><suffix>", or nullopt for any other name.
std::optional<int64_t> parse_step(const std::string& name, const std::string& suffix) {
  const std::string prefix = kStepPrefix;
  if (name.size() <= prefix.size() + suffix.size() || name.compare(0, prefix.size(), prefix) != 0 ||
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) {
    return std::nullopt;
  }
  const char* begin = name.data() + prefix.size();
  const char* end = name.data() + name.size() - suffix.size();
  if (!std::all_of(begin, end, [](char c) { return c >= '0' && c <= '9'; })) return std::nullopt;
  int64_t step = 0;
  const auto result = std::from_chars(begin, end, step);
  if (result.ec != std::errc() || result.ptr != end) return std::nullopt;
  return step;
}

// A pointer file holds one step directory name; anything longer is not one.
constexpr uintmax_t kMaxPointerBytes = 4096;

std::optional<std::string> read_pointer_name(const fs::path& run_dir, const std::string& pointer) {
  const fs::path file = checkpoints_dir(run_dir) / pointer;
  std::error_code error;
  const fs::file_status status = fs::status(file, error);
  if (status.type() == fs::file_type::not_found) return std::nullopt;
  ROTA_CHECK(!error && fs::is_regular_file(status),
             "checkpoint pointer {}: not a regular file (expected a text file naming a step "
             "directory)",
             file.string());
  const uintmax_t size = fs::file_size(file, error);
  ROTA_CHECK(!error && size <= kMaxPointerBytes,
             "checkpoint pointer {}: {} bytes, too long for the name of a step directory",
             file.string(), size);
  return parse_checkpoint_pointer(read_file(file), file.string());
}

std::optional<fs::path> follow_pointer(const fs::path& run_dir, const std::string& pointer) {
  const auto name = read_pointer_name(run_dir, pointer);
  if (!name) return std::nullopt;
  const fs::path dir = checkpoints_dir(run_dir) / *name;
  std::error_code error;
  ROTA_CHECK(fs::is_directory(dir, error),
             "checkpoint pointer {} names '{}', but {} does not exist (deleted, or the run "
             "directory was copied incompletely)",
             (checkpoints_dir(run_dir) / pointer).string(), *name, dir.string());
  return dir;
}

}  // namespace

std::string parse_checkpoint_pointer(std::string_view text, const std::string& file) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) {
    text.remove_suffix(1);
  }
  const std::string name(text);
  // Exactly the name checkpoint_dir_name writes: no extra leading zeros (which could make the
  // name longer than a file name may be).
  const std::optional<int64_t> step = parse_step(name, "");
  if (!step || name != checkpoint_dir_name(*step)) {
    // Shown escaped and cut short: the file may hold anything.
    constexpr size_t kShown = 64;
    std::string shown;
    for (const char c : text.substr(0, kShown)) {
      const auto byte = static_cast<unsigned char>(c);
      shown += byte >= 0x20 && byte < 0x7f ? std::string(1, c) : fmt::format("\\x{:02x}", byte);
    }
    if (text.size() > kShown) shown += fmt::format("... ({} bytes)", text.size());
    fail("checkpoint pointer {}: expected the name of a step directory (step_NNNNNN), found '{}'",
         file, shown);
  }
  return name;
}

std::string checkpoint_dir_name(int64_t step) {
  ROTA_CHECK(step >= 0, "checkpoint_dir_name: negative step {}", step);
  return fmt::format("{}{:06d}", kStepPrefix, step);
}

fs::path checkpoints_dir(const fs::path& run_dir) {
  return run_dir / "checkpoints";
}

std::vector<std::pair<int64_t, fs::path>> list_checkpoints(const fs::path& run_dir) {
  std::vector<std::pair<int64_t, fs::path>> found;
  const fs::path dir = checkpoints_dir(run_dir);
  if (!fs::is_directory(dir)) return found;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (!entry.is_directory()) continue;
    if (const auto step = parse_step(entry.path().filename().string(), "")) {
      found.emplace_back(*step, entry.path());
    }
  }
  std::sort(found.begin(), found.end());
  return found;
}

std::optional<fs::path> find_latest(const fs::path& run_dir) {
  return follow_pointer(run_dir, "latest");
}

std::optional<fs::path> find_best(const fs::path& run_dir) {
  return follow_pointer(run_dir, "best");
}

fs::path resolve_checkpoint(const fs::path& run_or_checkpoint) {
  ROTA_CHECK(fs::exists(run_or_checkpoint), "checkpoint {}: no such file or directory",
             run_or_checkpoint.string());
  if (fs::exists(run_or_checkpoint / "state.binpb")) return run_or_checkpoint;
  // RUN/checkpoints/latest or RUN/checkpoints/best: follow the pointer file.
  const fs::path name = run_or_checkpoint.filename();
  if (fs::is_regular_file(run_or_checkpoint) && (name == "latest" || name == "best") &&
      run_or_checkpoint.parent_path().filename() == "checkpoints") {
    return *follow_pointer(run_or_checkpoint.parent_path().parent_path(), name.string());
  }
  if (const auto latest = find_latest(run_or_checkpoint)) return *latest;
  fail(
      "{} is neither a checkpoint directory (no state.binpb), a checkpoints/latest or "
      "checkpoints/best pointer, nor a run directory with checkpoints/latest",
      run_or_checkpoint.string());
}

void write_checkpoint_pointer(const fs::path& run_dir, const std::string& pointer,
                              const std::string& dir_name) {
  write_file_atomically(checkpoints_dir(run_dir) / pointer, dir_name + "\n");
}

void prune_checkpoints(const fs::path& run_dir, int keep_last, const std::string& protect) {
  const fs::path dir = checkpoints_dir(run_dir);
  if (!fs::is_directory(dir)) return;
  std::set<std::string> kept = {protect};
  for (const char* pointer : {"latest", "best"}) {
    if (const auto name = read_pointer_name(run_dir, pointer)) kept.insert(*name);
  }
  std::vector<fs::path> doomed;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_directory() && (parse_step(name, ".tmp") || parse_step(name, ".deleting"))) {
      doomed.push_back(entry.path());  // leftovers of an interrupted write or deletion
    }
  }
  const auto complete = list_checkpoints(run_dir);
  if (keep_last > 0 && complete.size() > static_cast<size_t>(keep_last)) {
    for (size_t i = 0; i + keep_last < complete.size(); ++i) {  // oldest first
      const fs::path& path = complete[i].second;
      if (kept.count(path.filename().string()) != 0) continue;
      const fs::path deleting = path.string() + ".deleting";
      fs::rename(path, deleting);
      doomed.push_back(deleting);
    }
  }
  if (doomed.empty()) return;
  fsync_directory(dir);  // the renames are durable before anything is deleted
  for (const fs::path& path : doomed) fs::remove_all(path);
  fsync_directory(dir);
}

}  // namespace rota::io
