// Whole-file reads and crash-safe writes (temporary file, fsync, rename, directory fsync).
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

namespace rota {

/// Writes a file so that a reader (or the next run after a crash) sees either the old content
/// or the complete new content, never a mix: bytes go to `<path>.tmp.<pid>` (one temporary
/// file per process, so concurrent writers of one path never share it); commit() fsyncs it,
/// renames it over `path` and fsyncs the directory so the rename itself is durable. Destroying
/// the writer without commit() (an exception mid-write) removes the temporary file and leaves
/// `path` untouched. Errors throw rota::Error naming the file and the system error.
class AtomicFileWriter {
 public:
  explicit AtomicFileWriter(std::filesystem::path path);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  /// Appends bytes to the temporary file.
  void write(const void* data, size_t size);
  void write(std::string_view bytes) { write(bytes.data(), bytes.size()); }
  /// Makes the new content visible under `path` and durable.
  void commit();

  const std::filesystem::path& path() const { return path_; }
  const std::filesystem::path& temp_path() const { return temp_path_; }

 private:
  std::filesystem::path path_;
  std::filesystem::path temp_path_;
  int fd_ = -1;
};

/// Replaces `path` with `content` atomically and durably (see AtomicFileWriter). The directory
/// must exist (a missing one is an error naming the file).
void write_file_atomically(const std::filesystem::path& path, std::string_view content);

/// The whole file as bytes; throws naming the file when it is missing or unreadable.
std::string read_file(const std::filesystem::path& path);

/// fsyncs a directory, making renames and creations inside it durable.
void fsync_directory(const std::filesystem::path& dir);

/// fsyncs every regular file directly inside `dir`, then the directory itself.
void fsync_directory_tree(const std::filesystem::path& dir);

}  // namespace rota
