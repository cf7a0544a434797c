// TrainState: field round trip, RNG streams restored exactly, every truncation/corruption refused.
#include "framework/io/train_state.h"

#include <string>

#include <gtest/gtest.h>

#include "tests/framework/io/io_test_util.h"
#include "tests/support/expect_error.h"

namespace rota::io {
namespace ROTA_TEST_FILE_NS {

TrainState full_state() {
  TrainState state;
  state.set_step(500);
  state.set_tokens_seen(123456789012);
  state.set_epoch(3);
  state.mutable_data_cursor()->set_epoch(3);
  state.mutable_data_cursor()->set_position(77);
  state.mutable_data_cursor()->set_shard(1);
  state.mutable_data_cursor()->set_num_shards(4);
  state.mutable_best_eval()->set_metric("valid_loss");
  state.mutable_best_eval()->set_value(1.875);
  state.mutable_best_eval()->set_step(400);
  state.set_lr_scale(0.5);
  state.set_wall_time_s(3600.25);
  state.set_seed(1234);
  auto* check = state.add_files();
  check->set_name("model.safetensors");
  check->set_size(99);
  check->set_crc32c(0xDEADBEEF);
  return state;
}

TEST(TrainState, RoundTripsEveryField) {
  TrainState state = full_state();
  Generator dropout(1), data(2);
  dropout.next_u64();
  save_rng_state(state, "dropout", dropout);
  save_rng_state(state, "data_order", data);
  const TrainState back = decode_train_state(encode_train_state(state), "state.binpb");

  EXPECT_EQ(back.version(), 1u);  // no base_weights: readable by every version
  EXPECT_EQ(back.step(), 500);
  EXPECT_EQ(back.tokens_seen(), 123456789012);
  EXPECT_EQ(back.epoch(), 3);
  EXPECT_EQ(back.data_cursor().position(), 77);
  EXPECT_EQ(back.data_cursor().epoch(), 3);
  EXPECT_EQ(back.data_cursor().shard(), 1);
  EXPECT_EQ(back.data_cursor().num_shards(), 4);
  EXPECT_TRUE(back.has_best_eval());
  EXPECT_EQ(back.best_eval().metric(), "valid_loss");
  EXPECT_EQ(back.best_eval().value(), 1.875);
  EXPECT_EQ(back.best_eval().step(), 400);
  EXPECT_EQ(back.lr_scale(), 0.5);
  EXPECT_EQ(back.wall_time_s(), 3600.25);
  EXPECT_EQ(back.seed(), 1234u);
  ASSERT_EQ(back.files_size(), 1);
  EXPECT_EQ(back.files(0).crc32c(), 0xDEADBEEFu);
  ASSERT_EQ(back.rng_states_size(), 2);

  // A restored generator continues the saved stream exactly.
  Generator restored(999);
  restore_rng_state(back, "dropout", restored);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(restored.next_u64(), dropout.next_u64());
  EXPECT_THROW(restore_rng_state(back, "masking", restored), Error);
}

TEST(TrainState, BaseWeightsRoundTripAsVersionTwo) {
  TrainState state = full_state();
  BaseWeights* base = state.mutable_base_weights();
  base->set_checkpoint("/runs/lm/checkpoints/step_001000");
  base->set_model_size(4096);
  base->set_model_crc32c(0x12345678);
  base->add_names("encoder.embed.weight");
  base->add_frozen("encoder.embed.weight");
  const TrainState back = decode_train_state(encode_train_state(state), "state.binpb");
  // Version 2: a reader that knows only version 1 refuses it rather than load half a model.
  EXPECT_EQ(back.version(), 2u);
  EXPECT_EQ(back.base_weights().checkpoint(), "/runs/lm/checkpoints/step_001000");
  EXPECT_EQ(back.base_weights().model_size(), 4096u);
  EXPECT_EQ(back.base_weights().model_crc32c(), 0x12345678u);
  EXPECT_EQ(back.base_weights().names(0), "encoder.embed.weight");
  EXPECT_EQ(back.base_weights().frozen(0), "encoder.embed.weight");
}

TEST(TrainState, SavingAStreamAgainReplacesIt) {
  TrainState state;
  Generator gen(5);
  save_rng_state(state, "init", gen);
  gen.next_u64();
  save_rng_state(state, "init", gen);
  ASSERT_EQ(state.rng_states_size(), 1);
  Generator restored;
  restore_rng_state(state, "init", restored);
  EXPECT_EQ(restored.state(), gen.state());
}

TEST(TrainState, FileIsAPlainProtobufWithTrailingChecksum) {
  const std::string bytes = encode_train_state(full_state());
  TrainState parsed;
  ASSERT_TRUE(parsed.ParseFromString(bytes));  // what Python's protobuf would do
  EXPECT_EQ(parsed.step(), 500);
  EXPECT_EQ(parsed.crc32c(), testing::bitwise_crc32c(bytes.substr(0, bytes.size() - 5)));
  EXPECT_EQ(static_cast<unsigned char>(bytes[bytes.size() - 5]), (15u << 3) | 5u);
}

TEST(TrainState, RefusesEveryTruncationAndEveryFlippedByte) {
  const std::string bytes = encode_train_state(full_state());
  for (size_t cut = 0; cut < bytes.size(); ++cut) {
    EXPECT_THROW(decode_train_state(bytes.substr(0, cut), "state.binpb"), Error) << cut;
  }
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string corrupted = bytes;
    corrupted[i] ^= 0x10;
    EXPECT_THROW(decode_train_state(corrupted, "state.binpb"), Error) << "byte " << i;
  }
  rota::testing::expect_error(
      [&] {
        std::string corrupted = bytes;
        corrupted[3] ^= 0x01;
        decode_train_state(corrupted, "/run/checkpoints/step_000500/state.binpb");
      },
      {"/run/checkpoints/step_000500/state.binpb", "checksum mismatch"});
}

TEST(TrainState, RefusesNewerVersions) {
  // Build a file by hand with version 2 and a valid checksum.
  TrainState state = full_state();
  std::string bytes = encode_train_state(state);
  TrainState parsed;
  ASSERT_TRUE(parsed.ParseFromString(bytes));
  parsed.set_version(kTrainStateVersion + 1);
  parsed.clear_crc32c();
  std::string body = parsed.SerializeAsString();
  const uint32_t crc = testing::bitwise_crc32c(body);
  body.push_back(static_cast<char>((15 << 3) | 5));
  for (int i = 0; i < 4; ++i) body.push_back(static_cast<char>((crc >> (8 * i)) & 0xFF));
  rota::testing::expect_error([&] { decode_train_state(body, "s"); }, "newer");
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::io
