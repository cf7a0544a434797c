// Whole-file reads and atomic writes (temporary file, fsync, rename).
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace rota::data {

/// The bytes of a file; throws rota::Error naming the path and the OS error.
std::string read_file(const std::filesystem::path& path);

/// Writes bytes to path through `path.tmp.<pid>`, fsyncs and renames it into place, so a
/// reader never sees a partial file. Creates the parent directory if needed.
void write_file_atomic(const std::filesystem::path& path, std::string_view bytes);

}  // namespace rota::data
