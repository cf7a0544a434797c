// Assertion that a call throws rota::Error whose message contains given fragments.
#pragma once

#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

namespace rota::testing {

/// Adds a test failure unless f() throws rota::Error with `fragment` in its message (the
/// message is printed when the fragment is missing).
void expect_error(const std::function<void()>& f, const std::string& fragment);

/// Adds a test failure unless f() throws rota::Error whose message contains every one of
/// `fragments` (one failure, naming the message, for each fragment it lacks).
void expect_error(const std::function<void()>& f, const std::vector<std::string>& fragments);

/// The same for a braced list of fragments: expect_error(f, {"matmul", "[2,3]"}).
inline void expect_error(const std::function<void()>& f,
                         std::initializer_list<std::string> fragments) {
  expect_error(f, std::vector<std::string>(fragments));
}

}  // namespace rota::testing
