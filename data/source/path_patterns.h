// Turning a split's path (a file, a directory or a glob pattern) into its list of files.
#pragma once

#include <filesystem>
#include <string_view>
#include <vector>

#include "data/source/file_format.h"

namespace rota::data {

/// Whether `name` matches the shell-style `pattern`: `*` any run of characters, `?` one
/// character, `[abc]`, `[a-z]`, `[!a]` one character of (or not of) a set. No `/` handling:
/// patterns are matched one path component at a time.
bool glob_match(std::string_view pattern, std::string_view name);

/// Whether a path contains a wildcard (`*`, `?` or `[`).
bool has_wildcard(std::string_view path);

/// Whether `path` is a regular file (following symbolic links); false when nothing is there.
/// A name that cannot be followed — a symbolic link loop, no permission — throws naming it and
/// `what` ("files.train"): it is the user's file all the same, so it is not skipped.
bool is_readable_regular_file(const std::filesystem::path& path, std::string_view what);

/// The files of a split, in order:
///  - a pattern with wildcards (in any component): the regular files it matches, sorted by
///    path; names starting with '.' match only a pattern component starting with '.';
///  - a directory: its regular files whose extension fits `format` (extension_fits), sorted;
///  - a file: itself.
/// Errors (naming `what`, e.g. "data.files.train") for a missing path, a pattern matching no
/// file, and a directory with no file of the format.
std::vector<std::filesystem::path> expand_split_paths(std::string_view spec, FileFormat format,
                                                      std::string_view what);

}  // namespace rota::data
