// The attention states a stateful run (train.carry_state) keeps in its checkpoints: gathered
// from every rank, written as one safetensors file, read back for this rank's lanes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "framework/distributed/communicator.h"
#include "models/language_models.h"

namespace rota::app {

/// The checkpoint file holding the carried states.
inline constexpr char kCarriedStateFile[] = "carried_state.safetensors";

/// This rank's carried states ([b, …] per block, b lanes per rank) joined in rank order into
/// [lanes, …] per block on every rank (collective). Every rank must hold states of the same
/// shapes, or none (the start of a lane: position 0).
std::vector<Tensor> gather_lane_states(distributed::Communicator& comm,
                                       const std::vector<Tensor>& mine);

/// The file's bytes: tensor "block.<i>" [lanes, …] per block (none at the start of the lanes),
/// metadata "position" (the next window's first position in its lane) and "lanes".
std::string encode_carried_states(const std::vector<Tensor>& states, int64_t position,
                                  int64_t lanes);

/// What a run expects of the file: its lanes, the position its next window starts at, and the
/// state of one lane of each block (shape [1, …] and dtype, from the model).
struct CarriedStateExpectation {
  int64_t lanes = 0;
  int64_t position = 0;
  std::vector<Tensor> one_lane_states;  // [1, …] per block
};

/// Reads the file and returns lanes [first, first + count) of every block's state, refusing
/// (rota::Error naming `name` and what differs) a file that does not fit the run: other lanes
/// (data.batch_size / train.gradient_accumulation changed), another position than the data
/// cursor's, other blocks or state shapes, another dtype. A file at position 0 holds no states
/// and gives none.
models::CausalLm::CarriedState decode_carried_states(const std::string& bytes,
                                                     const std::string& name,
                                                     const CarriedStateExpectation& expected,
                                                     int64_t first, int64_t count);

}  // namespace rota::app
