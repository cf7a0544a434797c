// expect_error assertion.
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

}  // namespace rota::testing
