// Library errors in Rota's words (see error_text.h).
#include "app/run/error_text.h"

#include <filesystem>
#include <system_error>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "framework/base/error.h"

namespace rota::app {
namespace {

// What could not be done, from the library's "filesystem error: cannot create directory: …".
std::string failed_operation(const std::filesystem::filesystem_error& error) {
  std::string text = error.what();
  const std::string tag = "filesystem error: ";
  if (text.rfind(tag, 0) == 0) text = text.substr(tag.size());
  text = text.substr(0, text.find(':'));
  const std::string cannot = "cannot ";
  if (text.rfind(cannot, 0) == 0) text = text.substr(cannot.size());
  if (text == "status" || text == "symlink_status") return "look up";
  return text.empty() ? std::string("use") : text;
}

std::string hint(const std::error_code& code) {
  if (code == std::errc::too_many_symbolic_link_levels) {
    return "; a symbolic link there leads back to itself: remove it or point it at a file";
  }
  if (code == std::errc::permission_denied || code == std::errc::operation_not_permitted ||
      code == std::errc::read_only_file_system) {
    return "; no permission to write there, or a read-only file system: choose a place you can "
           "write to";
  }
  if (code == std::errc::no_space_on_device) return "; the disk is full: free space and run again";
  if (code == std::errc::no_such_file_or_directory) {
    return "; it, or a directory on the way to it, does not exist";
  }
  if (code == std::errc::file_exists || code == std::errc::directory_not_empty) {
    return "; something else made it meanwhile (another process writing the same place?)";
  }
  return "";
}

}  // namespace

std::string error_text(const std::exception& error) {
  if (const auto* fs_error = dynamic_cast<const std::filesystem::filesystem_error*>(&error)) {
    std::string paths = fs_error->path1().string();
    if (!fs_error->path2().empty()) paths += " and " + fs_error->path2().string();
    return fmt::format("could not {} {}: {}{}", failed_operation(*fs_error),
                       paths.empty() ? std::string("a path") : paths, fs_error->code().message(),
                       hint(fs_error->code()));
  }
  if (dynamic_cast<const nlohmann::json::exception*>(&error) != nullptr) {
    return "a JSON document could not be read or written: " + library_detail(error);
  }
  return error.what();
}

}  // namespace rota::app
