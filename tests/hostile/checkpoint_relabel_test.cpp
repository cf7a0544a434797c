// A checkpoint whose float tensor was relabelled as integers (sizes and CRCs re-sealed, so every
// integrity check passes) is refused by name, never converted into garbage weights.
#include <cstring>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "framework/io/checkpoint.h"
#include "framework/io/checkpoint_paths.h"
#include "tests/hostile/hostile_support.h"
#include "tests/support/program.h"
#include "tests/support/temp_dir.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

namespace fs = std::filesystem;
using hostile::rota;
const std::string& kTiny = hostile::kTinyRecipe;

TEST(CheckpointRelabel, AnF32TensorStoredAsI32IsRefusedNotConverted) {
  testing::TempDir dir;
  const fs::path run = dir / "run";
  ASSERT_EQ(rota("train " + kTiny + " --out " + run.string() + " --set train.steps=2").code, 0);
  io::Checkpoint checkpoint = io::load_checkpoint(io::resolve_checkpoint(run));
  const std::string victim = "encoder.blocks.0.attn.q_proj.weight";
  StateDict relabelled;
  for (const auto& [name, tensor] : checkpoint.model) {
    if (name != victim) {
      relabelled.insert(name, tensor);
      continue;
    }
    // The same bytes under another dtype: what a relabelled safetensors header gives.
    Tensor as_int = Tensor::empty(tensor.shape(), DType::kI32);
    std::memcpy(as_int.data<int32_t>(), tensor.contiguous().data<float>(),
                sizeof(float) * static_cast<size_t>(tensor.numel()));
    relabelled.insert(name, as_int);
  }
  checkpoint.model = relabelled;
  const fs::path forged = dir / "forged";
  io::save_checkpoint(forged, checkpoint);  // sealed: sizes and CRCs match the forged files
  for (const std::string& command :
       {"eval " + forged.string(), "generate " + forged.string() + " --prompt ROMEO --tokens 4"}) {
    const testing::CommandResult r = rota(command);
    EXPECT_EQ(r.code, 1) << command << "\n" << r.output;
    EXPECT_NE(r.output.find("'" + victim + "': checkpoint holds i32 but the module holds f32"),
              std::string::npos)
        << command << "\n"
        << r.output;
    EXPECT_EQ(r.output.find("loss="), std::string::npos) << r.output;
  }
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
