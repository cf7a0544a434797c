// The checkpoints/ folder of a run: step directory names, the latest/best pointers, pruning.
//
//   RUN/checkpoints/step_000500/   one complete checkpoint (see checkpoint.h)
//   RUN/checkpoints/latest         text file naming the newest complete step directory
//   RUN/checkpoints/best           the same for the best evaluation (optional)
// Names ending in .tmp or .deleting are unfinished writes or deletions, never loaded.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rota::io {

/// "step_000500": zero-padded to 6 digits (more when the step needs them).
std::string checkpoint_dir_name(int64_t step);
/// RUN/checkpoints.
std::filesystem::path checkpoints_dir(const std::filesystem::path& run_dir);

/// Complete step directories of a run (not .tmp/.deleting ones), sorted by step.
std::vector<std::pair<int64_t, std::filesystem::path>> list_checkpoints(
    const std::filesystem::path& run_dir);

/// The step directory name a pointer file (`checkpoints/latest` or `best`) holds: its text
/// without trailing line breaks and spaces, which must be a step directory name ("step_000500").
/// Throws rota::Error naming `file` and showing (the start of) what it found otherwise.
std::string parse_checkpoint_pointer(std::string_view text, const std::string& file);

/// The checkpoint `checkpoints/latest` names; std::nullopt when the run has no `latest` file
/// (nothing saved yet). Throws when the file is malformed or names a directory that does not
/// exist.
std::optional<std::filesystem::path> find_latest(const std::filesystem::path& run_dir);
/// The same for `checkpoints/best`.
std::optional<std::filesystem::path> find_best(const std::filesystem::path& run_dir);

/// A checkpoint directory from what a user typed: a checkpoint directory itself (it holds
/// state.binpb), a pointer file RUN/checkpoints/latest or RUN/checkpoints/best (followed), or a
/// run directory whose `latest` is followed. Throws saying what it looked for.
std::filesystem::path resolve_checkpoint(const std::filesystem::path& run_or_checkpoint);

/// Points `checkpoints/<pointer>` ("latest" or "best") at the step directory `dir_name`,
/// atomically and durably.
void write_checkpoint_pointer(const std::filesystem::path& run_dir, const std::string& pointer,
                              const std::string& dir_name);

/// Deletes step directories beyond the newest `keep_last` (by step; 0 keeps all), never the
/// directory named `protect` nor the ones `latest` and `best` point at, and clears leftover
/// .tmp/.deleting directories. A directory is renamed to .deleting before it is removed, so a
/// crash never leaves a half-deleted directory under a checkpoint name.
void prune_checkpoints(const std::filesystem::path& run_dir, int keep_last,
                       const std::string& protect);

}  // namespace rota::io
