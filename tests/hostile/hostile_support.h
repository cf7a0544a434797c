// What the hostile-input tests share: the tiny recipe, running the built rota, refusals.
#pragma once

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/support/program.h"
#include "tests/support/source_tree.h"

namespace rota::hostile {

inline const std::string kTinyRecipe =
    std::string(ROTA_SOURCE_DIR) + "/recipes/tests/tiny_causal_lm.txtpb";

/// `rota ARGUMENTS` on one thread, killed after two minutes (a hang fails the test).
inline testing::CommandResult rota(const std::string& arguments) {
  return testing::run_command("OMP_NUM_THREADS=1 timeout 120 " + testing::built_rota() + " " +
                              arguments);
}

/// A usage or recipe error (exit code 2) whose output holds every needle.
inline void expect_refused(const testing::CommandResult& r,
                           const std::vector<std::string>& needles) {
  EXPECT_EQ(r.code, 2) << r.output;
  for (const std::string& needle : needles) {
    EXPECT_NE(r.output.find(needle), std::string::npos) << "no '" << needle << "' in\n" << r.output;
  }
}

}  // namespace rota::hostile
