// Writes a split's ids into fixed-size shard files, hashing them as they are written.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "data/dataset/token_sequence.h"
#include "data/prepared/manifest.h"
#include "data/util/sha256.h"
#include "framework/base/file_io.h"

namespace rota::data {

/// Shards `<split>-00000.bin`, `<split>-00001.bin`, ... of at most shard_tokens ids each (the
/// last may be shorter; a split without ids has no shard), raw ids of `width`, little-endian.
/// Each shard is written atomically (AtomicFileWriter) and its sha256 computed on the way.
class ShardWriter {
 public:
  ShardWriter(std::filesystem::path dir, std::string split, TokenWidth width, int64_t shard_tokens);
  ~ShardWriter();
  void append(std::span<const int64_t> ids);
  /// Commits the last shard; the shards written, in order.
  std::vector<ShardInfo> finish();

 private:
  void open_shard();
  void close_shard();

  std::filesystem::path dir_;
  std::string split_;
  TokenWidth width_;
  int64_t shard_tokens_;
  std::unique_ptr<AtomicFileWriter> file_;
  std::unique_ptr<Sha256> hash_;
  int64_t in_shard_ = 0;
  std::vector<unsigned char> buffer_;
  std::vector<ShardInfo> shards_;
};

}  // namespace rota::data
