// Fuzzes the train-state reader (io::decode_train_state), with and without a valid checksum.
#include <cstddef>
#include <cstdint>
#include <string>

#include "framework/base/error.h"
#include "framework/io/crc32c.h"
#include "framework/io/train_state.h"
#include "framework/tensor/random.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  // First byte even: the rest is the file as it is. Odd: the rest is the message and the
  // checksum field is appended, so the fuzzer reaches the protobuf parse and the checks after.
  std::string bytes(rota::fuzz::as_text(data + 1, size - 1));
  if (data[0] % 2 == 1) {
    const uint32_t crc = rota::io::crc32c(bytes);
    bytes.push_back(static_cast<char>((15u << 3) | 5u));
    for (int i = 0; i < 4; ++i) bytes.push_back(static_cast<char>((crc >> (8 * i)) & 0xFFu));
  }
  try {
    const rota::io::TrainState state = rota::io::decode_train_state(bytes, "fuzz/state.binpb");
    // What resuming does next with the RNG streams.
    for (const auto& entry : state.rng_states()) {
      rota::Generator generator(1);
      rota::io::restore_rng_state(state, entry.name(), generator);
    }
  } catch (const rota::Error&) {
    // The expected outcome for a bad file.
  }
  return 0;
}
