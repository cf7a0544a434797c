// Helpers shared by the fuzz targets: a per-process scratch directory and writing bytes to it.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <system_error>

namespace rota::fuzz {

/// A directory of this process (in /dev/shm when there is one: no disk I/O per input),
/// removed when the process exits normally.
inline const std::filesystem::path& scratch_dir(const std::string& purpose) {
  struct Dir {
    std::filesystem::path path;
    ~Dir() {
      std::error_code ignored;
      std::filesystem::remove_all(path, ignored);
    }
  };
  static const Dir dir = [&purpose] {
    std::error_code ignored;
    const std::filesystem::path root = std::filesystem::is_directory("/dev/shm", ignored)
                                           ? std::filesystem::path("/dev/shm")
                                           : std::filesystem::temp_directory_path();
    Dir made{root / ("rota-fuzz-" + purpose + "-" + std::to_string(getpid()))};
    std::filesystem::create_directories(made.path);
    return made;
  }();
  return dir.path;
}

/// Writes `bytes` to `file`, replacing it.
inline void write_bytes(const std::filesystem::path& file, std::string_view bytes) {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

/// A small valid recipe (the shape of recipes/default.txtpb), for targets that need one.
inline constexpr std::string_view kSmallRecipe = R"(version: 1
model {
  kind: CAUSAL_LM
  width: 32
  layers: 2
  heads: 2
  ffn_width: 64
  attention { linear { feature_map: ONE_PLUS_ELU normalization: LAYER_NORM chunk_size: 16 } }
  position { lrpe { type: 2 pairing: ADJACENT p: HOUSEHOLDER learn_theta: true } }
}
data { corpus: "tinyshakespeare" tokenizer { kind: CHAR } sequence_length: 64 batch_size: 4 }
optimizer { adamw { beta1: 0.9 beta2: 0.99 weight_decay: 0.01 } }
schedule { kind: COSINE lr: 2e-3 min_lr: 2e-4 warmup_steps: 10 }
train { steps: 100 eval_every: 50 seed: 1 }
)";

/// The input as text.
inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

}  // namespace rota::fuzz
