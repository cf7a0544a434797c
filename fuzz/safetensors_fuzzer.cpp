// Fuzzes the safetensors reader (io::parse_safetensors) on raw file bytes.
#include <cstddef>
#include <cstdint>

#include "framework/base/error.h"
#include "framework/io/safetensors.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const rota::io::SafetensorsContent content =
        rota::io::parse_safetensors(rota::fuzz::as_text(data, size), "fuzz.safetensors");
    // Every tensor it accepts is backed by bytes of the input.
    size_t bytes = 0;
    for (const auto& [name, tensor] : content.tensors) bytes += tensor.nbytes();
    if (bytes > size) __builtin_trap();
  } catch (const rota::Error&) {
    // The expected outcome for a bad file.
  }
  return 0;
}
