// Error type and checking macros: every failure is an exception naming the op and the shapes.
#pragma once

#include <exception>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace rota {

/// Thrown for any misuse of the API (bad shapes, axes, dtypes) and for runtime failures.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

/// A library exception's message without the library's tag, for a Rota sentence to quote as
/// its detail: nlohmann's "[json.exception.parse_error.101] parse error at line 1, …" gives
/// "parse error at line 1, …"; other messages are returned whole.
inline std::string library_detail(const std::exception& error) {
  std::string text = error.what();
  if (text.rfind("[json.exception.", 0) == 0) {
    const size_t end = text.find("] ");
    if (end != std::string::npos) text.erase(0, end + 2);
  }
  return text;
}

/// Throws rota::Error with a fmt-formatted message.
template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) {
  throw Error(fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace rota

/// ROTA_CHECK(cond, "op: {} vs {}", a, b): throws rota::Error with the message when cond is false.
#define ROTA_CHECK(cond, ...)               \
  do {                                      \
    if (!(cond)) ::rota::fail(__VA_ARGS__); \
  } while (0)
