// An exclusive lock on a directory (flock on DIR/.lock) whose refusal names the holder's PID.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "framework/base/error.h"

namespace rota {

/// The lock file of a locked directory: DIR/.lock.
inline constexpr char kLockFileName[] = ".lock";

/// Who holds a directory lock, as its lock file records it. The record is informational only:
/// the lock is the flock on the file, which the kernel releases when the holder exits or dies,
/// so a lock file left by a killed process never blocks anyone.
struct LockHolder {
  long pid = 0;  // 0: unknown
  std::string host;
  std::string since;    // local time the lock was taken, "2026-11-21 03:37:01"
  std::string command;  // the holder's command line, "rota train r.txtpb --out runs/x"
};

/// Parses a lock file's text ("pid 1234\nhost h\nsince ...\ncommand ...\n"); what is missing or
/// malformed stays empty (pid 0).
LockHolder parse_lock_holder(std::string_view text);

/// The text a lock file holds for `holder` (the inverse of parse_lock_holder).
std::string format_lock_holder(const LockHolder& holder);

/// Thrown when the directory is locked by someone else (another process, or another
/// DirectoryLock of this process). The message names the directory and the holder.
class DirectoryBusyError : public Error {
 public:
  DirectoryBusyError(const std::string& message, LockHolder holder)
      : Error(message), holder_(std::move(holder)) {}
  const LockHolder& holder() const { return holder_; }

 private:
  LockHolder holder_;
};

/// An exclusive advisory lock on a directory for the object's lifetime: flock(LOCK_EX | LOCK_NB)
/// on DIR/.lock, which then records this process (pid, host, time, command line). Every writer
/// that takes the same lock (rota train on a run directory, rota ablate on its output) excludes
/// the others; readers need none. The lock file stays when the lock is released (removing it
/// would let two processes lock two different files of one name); its record is cleared.
class DirectoryLock {
 public:
  /// Creates `dir` (and its parents) if needed and takes the lock. When it is held elsewhere,
  /// throws DirectoryBusyError: "DIR is in use by COMMAND (pid N on HOST since TIME); ADVICE".
  /// Other failures (cannot create the directory or the file) throw rota::Error naming the path.
  explicit DirectoryLock(const std::filesystem::path& dir,
                         std::string_view advice = "wait for it to finish or stop it");
  ~DirectoryLock();
  DirectoryLock(const DirectoryLock&) = delete;
  DirectoryLock& operator=(const DirectoryLock&) = delete;

  const std::filesystem::path& dir() const { return dir_; }
  const std::filesystem::path& file() const { return file_; }

 private:
  std::filesystem::path dir_;
  std::filesystem::path file_;
  int fd_ = -1;
};

/// This process's command line as lock files record it: the program's file name, then its
/// arguments separated by spaces ("rota train r.txtpb --out runs/x"); at most 300 characters.
std::string current_command_line();

}  // namespace rota
