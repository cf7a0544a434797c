// Checksum verification of local files, remembered by (path, size, mtime) so it runs once.
#pragma once

#include <filesystem>
#include <string>

namespace rota::data {

/// Name of the record file inside the cache directory.
inline constexpr const char* kChecksumRecordFile = "verified-sha256.tsv";

/// True when file's sha256 equals expected. A successful check is recorded in
/// <cache_dir>/verified-sha256.tsv as (sha256, size, mtime in ns, absolute path); later calls
/// with the same path, size and mtime trust the record instead of re-hashing (a file changed
/// in place without changing its size and mtime would go unnoticed; touch it to force a
/// re-check). Recording is best effort: an unwritable cache only costs the re-hash. On a
/// mismatch, *actual (when given) receives the computed digest.
bool verify_file_checksum(const std::filesystem::path& file, const std::string& expected,
                          const std::filesystem::path& cache_dir, std::string* actual = nullptr);

}  // namespace rota::data
