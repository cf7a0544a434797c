// Fuzzes the checkpoints/latest pointer: its parser, and find_latest on a run directory.
#include <cstddef>
#include <cstdint>
#include <filesystem>

#include "framework/base/error.h"
#include "framework/io/checkpoint_paths.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace fs = std::filesystem;
  static const fs::path run = [] {
    const fs::path dir = rota::fuzz::scratch_dir("pointer");
    fs::create_directories(rota::io::checkpoints_dir(dir) / "step_000001");
    return dir;
  }();
  const std::string_view text = rota::fuzz::as_text(data, size);
  try {
    rota::io::parse_checkpoint_pointer(text, "fuzz/latest");
  } catch (const rota::Error&) {
    // The expected outcome for a bad pointer.
  }
  rota::fuzz::write_bytes(rota::io::checkpoints_dir(run) / "latest", text);
  try {
    const auto latest = rota::io::find_latest(run);
    if (!latest || latest->filename() != "step_000001") __builtin_trap();
  } catch (const rota::Error&) {
    // The expected outcome for a bad pointer, or one naming a directory that does not exist.
  }
  return 0;
}
