// `rota train --progress auto|plain|none`: a redrawn line only on a real terminal of a run not
// started by mpirun; plain lines otherwise; none prints no progress (the logs still get it).
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "framework/base/file_io.h"
#include "tests/support/program.h"
#include "tests/support/source_tree.h"
#include "tests/support/temp_dir.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

const std::string kTiny = std::string(ROTA_SOURCE_DIR) + "/recipes/tests/tiny_causal_lm.txtpb";

/// `rota train` on a pseudo-terminal (util-linux `script`), with `env` before the command.
testing::CommandResult train_on_terminal(const testing::TempDir& dir, const std::string& name,
                                         const std::string& env, const std::string& flags) {
  const std::string command = env + " OMP_NUM_THREADS=1 " + testing::built_rota() + " train " +
                              kTiny + " --out " + (dir / name).string() + " " + flags;
  return testing::run_command("script -qec '" + command + "' /dev/null");
}

bool redraws(const std::string& output) {
  return output.find("\x1b[") != std::string::npos;  // cursor and line-clearing escapes
}

TEST(ProgressModes, AutoRedrawsOnATerminalAndPlainNeverDoes) {
  testing::TempDir dir;
  const testing::CommandResult automatic = train_on_terminal(dir, "auto", "", "");
  ASSERT_EQ(automatic.code, 0) << automatic.output;
  EXPECT_TRUE(redraws(automatic.output)) << automatic.output;
  const testing::CommandResult plain = train_on_terminal(dir, "plain", "", "--progress plain");
  ASSERT_EQ(plain.code, 0) << plain.output;
  EXPECT_FALSE(redraws(plain.output)) << plain.output;
  EXPECT_NE(plain.output.find("step 5/20 | loss(ema) "), std::string::npos) << plain.output;
}

TEST(ProgressModes, AutoUnderMpirunPrintsPlainLines) {
  testing::TempDir dir;
  // Open MPI gives ranks a terminal even when mpirun writes to a file; its environment says so.
  const testing::CommandResult r = train_on_terminal(dir, "mpi", "OMPI_COMM_WORLD_SIZE=1", "");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_FALSE(redraws(r.output)) << r.output;
  EXPECT_NE(r.output.find("step 20/20 | loss(ema) "), std::string::npos) << r.output;
}

TEST(ProgressModes, NonePrintsNoProgressButTheLogsHaveIt) {
  testing::TempDir dir;
  const testing::CommandResult r = train_on_terminal(dir, "none", "", "--progress none");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(r.output.find("step 5/20"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("step=20 run="), std::string::npos) << r.output;
  EXPECT_NE(read_file(dir / "none" / "metrics.jsonl").find("\"step\":20"), std::string::npos);
  const testing::CommandResult bad =
      testing::run_command(testing::built_rota() + " train " + kTiny + " --progress fancy");
  EXPECT_EQ(bad.code, 2) << bad.output;
  EXPECT_NE(bad.output.find("--progress: 'fancy' is not one of auto, plain, none"),
            std::string::npos)
      << bad.output;
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
