// A read-only token sequence stored compactly (uint16 or uint32 ids), in memory or mapped shards.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace rota::data {

/// How ids are stored: 2 bytes when every id is below 65,536, else 4 (little-endian on disk).
enum class TokenWidth : int { kU16 = 2, kU32 = 4 };

/// The width for ids in [0, vocab_size): kU16 when vocab_size <= 65,536, else kU32.
TokenWidth token_width_for_vocab(int64_t vocab_size);
/// "uint16" / "uint32" (the manifest's dtype), and back (throws on another name).
const char* token_width_name(TokenWidth width);
TokenWidth parse_token_width(const std::string& name);
/// Bytes per id.
inline int64_t token_bytes(TokenWidth width) {
  return static_cast<int64_t>(width);
}

/// Ids every copy of a TokenSequence checks (a file's ids can be damaged after they were
/// written): each must be below `limit` (0: unchecked), else the copy throws naming the
/// segment, the position and the id, followed by `advice`.
struct TokenIdCheck {
  int64_t limit = 0;
  std::string advice;
};

/// The ids of one split, read-only: one or more contiguous segments of ids of one width
/// (owned vectors, or memory-mapped shard files), seen as one sequence. The owner keeps the
/// segments' memory alive. Copying a window into int64 rows is the only hot operation.
class TokenSequence {
 public:
  struct Segment {
    const void* data = nullptr;  // `size` ids of the sequence's width
    int64_t size = 0;
    /// Memory-mapped file pages: after a copy, the pages read are handed back to the kernel
    /// (madvise MADV_DONTNEED; they stay in the page cache), so random windows over a large
    /// shard do not pile up in the process's resident memory.
    bool mapped = false;
    /// What the segment is, for errors ("shard train-00001.bin of the prepared corpus D").
    std::string source;
  };
  TokenSequence(TokenWidth width, std::vector<Segment> segments, std::shared_ptr<const void> owner,
                TokenIdCheck id_check = TokenIdCheck());

  /// Number of ids (N).
  int64_t size() const { return size_; }
  TokenWidth width() const { return width_; }
  /// Id i, in [0, size()).
  int64_t at(int64_t i) const;
  /// Copies ids [start, start + count) into out (count int64 values); the range must lie inside
  /// [0, size()) (checked), and so must the ids, below the TokenIdCheck's limit when it has one.
  void copy_to(int64_t start, int64_t count, int64_t* out) const;
  /// All ids as int64 (tests and small splits).
  std::vector<int64_t> to_vector() const;

 private:
  TokenWidth width_;
  std::vector<Segment> segments_;
  std::vector<int64_t> starts_;  // first id of each segment; starts_.back() == size_
  std::shared_ptr<const void> owner_;
  TokenIdCheck id_check_;
  int64_t size_ = 0;
};

/// The position (relative to `offset`) of the first of `count` ids from `offset` of `data` (ids
/// of `width`) that is >= limit, or -1 when all are below it.
int64_t first_id_at_or_above(const void* data, TokenWidth width, int64_t offset, int64_t count,
                             int64_t limit);

/// Appends ids into owned memory of one width; ids outside the width's range are an error.
/// Memory grows in fixed chunks (segments of the sequence), never by copying what is there, so
/// building N ids needs N ids of memory plus one chunk.
class TokenSequenceBuilder {
 public:
  explicit TokenSequenceBuilder(TokenWidth width, int64_t chunk_ids = int64_t{1} << 24);
  void append(std::span<const int64_t> ids);
  int64_t size() const { return size_; }
  /// The sequence built so far (the builder is empty afterwards).
  std::shared_ptr<const TokenSequence> finish();

 private:
  TokenWidth width_;
  int64_t chunk_ids_;
  int64_t size_ = 0;
  std::vector<std::vector<uint16_t>> u16_;
  std::vector<std::vector<uint32_t>> u32_;
};

/// Converts ids to `width` into out (ids.size() * token_bytes(width) bytes); an id outside
/// [0, 2^16) or [0, 2^32) throws naming it.
void narrow_ids(std::span<const int64_t> ids, TokenWidth width, void* out);

}  // namespace rota::data
