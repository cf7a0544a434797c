// Carried attention states in checkpoints: gather across ranks, encode, decode and check.
#include "app/tasks/carried_state_file.h"

#include <charconv>
#include <cstring>

#include <fmt/format.h>

#include "framework/base/error.h"
#include "framework/io/safetensors.h"

namespace rota::app {

namespace {

std::string block_name(size_t i) {
  return fmt::format("block.{}", i);
}

int64_t metadata_int(const io::SafetensorsMetadata& metadata, const char* key,
                     const std::string& name) {
  const auto it = metadata.find(key);
  ROTA_CHECK(it != metadata.end(), "{}: no '{}' in its metadata (not a carried-state file)", name,
             key);
  int64_t value = 0;
  const char* end = it->second.data() + it->second.size();
  const auto [ptr, ec] = std::from_chars(it->second.data(), end, value);
  ROTA_CHECK(ec == std::errc() && ptr == end && value >= 0,
             "{}: metadata '{}' is '{}', not a count", name, key, it->second);
  return value;
}

}  // namespace

std::vector<Tensor> gather_lane_states(distributed::Communicator& comm,
                                       const std::vector<Tensor>& mine) {
  if (comm.world_size() == 1) return mine;
  // Every rank is at the same window, so all hold states or none does; every rank sees the
  // same counts and refuses together.
  const std::vector<int64_t> counts =
      distributed::allgather(comm, std::vector<int64_t>{static_cast<int64_t>(mine.size())});
  for (int64_t c : counts) {
    ROTA_CHECK(c == counts[0], "carried state: the ranks hold {} and {} states", counts[0], c);
  }
  std::vector<Tensor> joined;
  for (const Tensor& state : mine) {
    // The bytes as 8-byte words (padded), gathered in rank order: rank r's lanes follow r − 1's.
    const Tensor local = state.contiguous();
    const size_t bytes = local.nbytes();
    std::vector<int64_t> words((bytes + 7) / 8, 0);
    std::memcpy(words.data(), local.raw_data(), bytes);
    const std::vector<int64_t> all = distributed::allgather(comm, words);
    std::vector<int64_t> shape = local.shape();
    shape[0] *= comm.world_size();
    Tensor out = Tensor::empty(shape, local.dtype());
    auto* dst = static_cast<char*>(out.raw_data());
    for (int r = 0; r < comm.world_size(); ++r) {
      std::memcpy(dst + r * bytes, all.data() + r * words.size(), bytes);
    }
    joined.push_back(out);
  }
  return joined;
}

std::string encode_carried_states(const std::vector<Tensor>& states, int64_t position,
                                  int64_t lanes) {
  io::NamedTensors tensors;
  for (size_t i = 0; i < states.size(); ++i) tensors.emplace_back(block_name(i), states[i]);
  return io::encode_safetensors(
      tensors, {{"position", std::to_string(position)}, {"lanes", std::to_string(lanes)}});
}

models::CausalLm::CarriedState decode_carried_states(const std::string& bytes,
                                                     const std::string& name,
                                                     const CarriedStateExpectation& expected,
                                                     int64_t first, int64_t count) {
  const io::SafetensorsContent content = io::parse_safetensors(bytes, name);
  const int64_t lanes = metadata_int(content.metadata, "lanes", name);
  const int64_t position = metadata_int(content.metadata, "position", name);
  ROTA_CHECK(lanes == expected.lanes,
             "{}: written by a run with {} lanes, but this run reads {} (data.batch_size / "
             "train.gradient_accumulation); the carried states cannot be shared out again",
             name, lanes, expected.lanes);
  ROTA_CHECK(position == expected.position,
             "{}: the states are for position {} of each lane, but the data cursor's next window "
             "starts at position {}",
             name, position, expected.position);
  models::CausalLm::CarriedState carried;
  carried.position = position;
  if (position == 0) {
    ROTA_CHECK(content.tensors.empty(), "{}: states at position 0 (the start of the lanes)", name);
    return carried;
  }
  const size_t blocks = expected.one_lane_states.size();
  ROTA_CHECK(content.tensors.size() == blocks, "{}: {} states, but the model has {} blocks", name,
             content.tensors.size(), blocks);
  for (size_t i = 0; i < blocks; ++i) {
    ROTA_CHECK(content.tensors.contains(block_name(i)), "{}: no tensor '{}'", name, block_name(i));
    const Tensor& state = content.tensors.at(block_name(i));
    std::vector<int64_t> want = expected.one_lane_states[i].shape();
    want[0] = lanes;
    ROTA_CHECK(state.shape() == want && state.dtype() == expected.one_lane_states[i].dtype(),
               "{}: '{}' is {} {}, but this model's state is {} {}", name, block_name(i),
               dtype_name(state.dtype()), shape_str(state.shape()),
               dtype_name(expected.one_lane_states[i].dtype()), shape_str(want));
    ROTA_CHECK(first >= 0 && count >= 1 && first + count <= lanes,
               "{}: lanes [{}, {}) outside [0, {})", name, first, first + count, lanes);
    carried.states.push_back(state.narrow(0, first, count).contiguous().clone());
  }
  return carried;
}

}  // namespace rota::app
