// expect_error assertions (see expect_error.h).
#include "tests/support/expect_error.h"

#include <gtest/gtest.h>

#include "framework/base/error.h"

namespace rota::testing {

void expect_error(const std::function<void()>& f, const std::string& fragment) {
  try {
    f();
    FAIL() << "expected an error containing: " << fragment;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

void expect_error(const std::function<void()>& f, const std::vector<std::string>& fragments) {
  try {
    f();
  } catch (const Error& e) {
    const std::string message = e.what();
    for (const auto& fragment : fragments) {
      EXPECT_NE(message.find(fragment), std::string::npos)
          << "message '" << message << "' lacks '" << fragment << "'";
    }
    return;
  }
  std::string wanted;
  for (const auto& fragment : fragments) wanted += (wanted.empty() ? "'" : ", '") + fragment + "'";
  ADD_FAILURE() << "no rota::Error thrown; expected one containing " << wanted;
}

}  // namespace rota::testing
