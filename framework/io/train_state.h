// TrainState (generated from train_state.proto): checksummed encoding and RNG capture/restore.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "framework/io/train_state.pb.h"
#include "framework/tensor/random.h"

namespace rota::io {

/// Schema version: the newest this build reads. A state with base_weights is written as
/// version 2 (older readers refuse it instead of loading half a model), any other as version 1.
inline constexpr uint32_t kTrainStateVersion = 2;

/// `state` serialized with `version` set (1, or 2 with base_weights) and the crc32c field
/// appended last (CRC-32C of every byte before it). Any crc32c already in `state` is ignored.
std::string encode_train_state(const TrainState& state);
/// Parses what encode_train_state wrote; refuses (naming `name`) a file too short to hold the
/// checksum, a missing or wrong checksum (truncated or corrupted), bytes protobuf cannot parse,
/// and a version that is missing or newer than kTrainStateVersion.
TrainState decode_train_state(std::string_view bytes, const std::string& name);

/// Stores the generator's state under `name`, replacing an entry of that name.
void save_rng_state(TrainState& state, const std::string& name, const Generator& generator);
/// Sets the generator to the state stored under `name`; throws when there is none.
void restore_rng_state(const TrainState& state, const std::string& name, Generator& generator);

}  // namespace rota::io
