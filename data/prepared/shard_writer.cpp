// Shard files of ids, hashed as written.
#include "data/prepared/shard_writer.h"

#include <algorithm>

#include <fmt/format.h>

#include "framework/base/error.h"

namespace rota::data {

ShardWriter::ShardWriter(std::filesystem::path dir, std::string split, TokenWidth width,
                         int64_t shard_tokens)
    : dir_(std::move(dir)), split_(std::move(split)), width_(width), shard_tokens_(shard_tokens) {
  ROTA_CHECK(shard_tokens > 0, "data: shards must hold at least one id (got {})", shard_tokens);
}

ShardWriter::~ShardWriter() = default;

void ShardWriter::open_shard() {
  ShardInfo info;
  info.file = fmt::format("{}-{:05d}.bin", split_, shards_.size());
  shards_.push_back(info);
  file_ = std::make_unique<AtomicFileWriter>(dir_ / info.file);
  hash_ = std::make_unique<Sha256>();
  in_shard_ = 0;
}

void ShardWriter::close_shard() {
  if (!file_) return;
  file_->commit();
  ShardInfo& info = shards_.back();
  info.tokens = in_shard_;
  info.bytes = in_shard_ * token_bytes(width_);
  info.sha256 = hash_->hex_digest();
  file_.reset();
  hash_.reset();
}

void ShardWriter::append(std::span<const int64_t> ids) {
  while (!ids.empty()) {
    if (!file_ || in_shard_ == shard_tokens_) {
      close_shard();
      open_shard();
    }
    const size_t n = std::min(ids.size(), static_cast<size_t>(shard_tokens_ - in_shard_));
    buffer_.resize(n * static_cast<size_t>(token_bytes(width_)));
    narrow_ids(ids.first(n), width_, buffer_.data());
    file_->write(buffer_.data(), buffer_.size());
    hash_->update(buffer_.data(), buffer_.size());
    in_shard_ += static_cast<int64_t>(n);
    ids = ids.subspan(n);
  }
}

std::vector<ShardInfo> ShardWriter::finish() {
  close_shard();
  return std::move(shards_);
}

}  // namespace rota::data
