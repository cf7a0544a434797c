// Assertion that a call throws rota::Error whose message contains a given fragment.
#pragma once

#include <functional>
#include <string>

namespace rota::testing {

/// Adds a test failure unless f() throws rota::Error with `fragment` in its message (the
/// message is printed when the fragment is missing).
void expect_error(const std::function<void()>& f, const std::string& fragment);

}  // namespace rota::testing
