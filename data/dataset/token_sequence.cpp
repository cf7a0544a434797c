// Compact token sequences: width choice, segment lookup, window copies, the in-memory builder.
#include "data/dataset/token_sequence.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cstring>

#include "data/dataset/batch.h"
#include "framework/base/error.h"

namespace rota::data {

static_assert(std::endian::native == std::endian::little,
              "shards hold little-endian ids, read in place");

namespace {

template <typename T>
void widen(const void* data, int64_t offset, int64_t count, int64_t* out) {
  const T* in = static_cast<const T*>(data) + offset;
  for (int64_t i = 0; i < count; ++i) out[i] = static_cast<int64_t>(in[i]);
}

template <typename T>
void narrow(std::span<const int64_t> ids, void* out, int64_t limit) {
  T* dst = static_cast<T*>(out);
  for (size_t i = 0; i < ids.size(); ++i) {
    const int64_t id = ids[i];
    ROTA_CHECK(id >= 0 && id < limit, "token sequence: id {} does not fit in {} bytes", id,
               sizeof(T));
    dst[i] = static_cast<T>(id);
  }
}

}  // namespace

TokenWidth token_width_for_vocab(int64_t vocab_size) {
  ROTA_CHECK(vocab_size > 0 && vocab_size <= (int64_t{1} << 32),
             "token sequence: vocabulary size {} outside [1, 2^32]", vocab_size);
  return vocab_size <= 65536 ? TokenWidth::kU16 : TokenWidth::kU32;
}

const char* token_width_name(TokenWidth width) {
  return width == TokenWidth::kU16 ? "uint16" : "uint32";
}

TokenWidth parse_token_width(const std::string& name) {
  if (name == "uint16") return TokenWidth::kU16;
  if (name == "uint32") return TokenWidth::kU32;
  fail("token sequence: unknown dtype '{}' (uint16 or uint32)", name);
}

void narrow_ids(std::span<const int64_t> ids, TokenWidth width, void* out) {
  if (width == TokenWidth::kU16) {
    narrow<uint16_t>(ids, out, int64_t{1} << 16);
  } else {
    narrow<uint32_t>(ids, out, int64_t{1} << 32);
  }
}

int64_t first_id_at_or_above(const void* data, TokenWidth width, int64_t offset, int64_t count,
                             int64_t limit) {
  const auto scan = [&](const auto* ids) -> int64_t {
    ids += offset;
    // The maximum first (vectorised), the position only when there is one.
    int64_t top = 0;
    for (int64_t i = 0; i < count; ++i) top = std::max<int64_t>(top, ids[i]);
    if (top < limit) return -1;
    for (int64_t i = 0; i < count; ++i) {
      if (static_cast<int64_t>(ids[i]) >= limit) return i;
    }
    return -1;
  };
  return width == TokenWidth::kU16 ? scan(static_cast<const uint16_t*>(data))
                                   : scan(static_cast<const uint32_t*>(data));
}

TokenSequence::TokenSequence(TokenWidth width, std::vector<Segment> segments,
                             std::shared_ptr<const void> owner, TokenIdCheck id_check)
    : width_(width), owner_(std::move(owner)), id_check_(std::move(id_check)) {
  for (const Segment& segment : segments) {
    ROTA_CHECK(segment.size >= 0 && (segment.size == 0 || segment.data != nullptr),
               "token sequence: bad segment of {} ids", segment.size);
    if (segment.size == 0) continue;
    starts_.push_back(size_);
    segments_.push_back(segment);
    size_ += segment.size;
  }
  starts_.push_back(size_);
}

int64_t TokenSequence::at(int64_t i) const {
  int64_t id = 0;
  copy_to(i, 1, &id);
  return id;
}

namespace {

// Drops the process's mapping of the pages around ids [offset, offset + n) of a mapped segment
// of `size` ids (clean, file-backed: the next read faults them back in from the page cache).
// The kernel maps more than the pages a read touches (fault-around, whole page-cache folios), so
// the whole 2 MiB-aligned blocks holding the window are released, within the segment's mapping.
void release_pages(const void* data, int64_t size, int64_t offset, int64_t n,
                   int64_t bytes_per_id) {
  static const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  constexpr uintptr_t kBlock = uintptr_t{2} << 20;
  const uintptr_t base = reinterpret_cast<uintptr_t>(data);  // page-aligned: a mapping's start
  const uintptr_t limit =
      base + (static_cast<uintptr_t>(size * bytes_per_id) + page - 1) / page * page;
  const uintptr_t begin = base + static_cast<uintptr_t>(offset * bytes_per_id);
  const uintptr_t end = begin + static_cast<uintptr_t>(n * bytes_per_id);
  const uintptr_t first = std::max(base, begin / kBlock * kBlock);
  const uintptr_t last = std::min(limit, (end + kBlock - 1) / kBlock * kBlock);
  if (last > first) ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

}  // namespace

void TokenSequence::copy_to(int64_t start, int64_t count, int64_t* out) const {
  ROTA_CHECK(start >= 0 && count >= 0 && start + count <= size_,
             "token sequence: ids [{}, {}) outside [0, {})", start, start + count, size_);
  if (count == 0) return;
  // The segment holding `start`: the last one whose first id is <= start.
  size_t s = static_cast<size_t>(std::upper_bound(starts_.begin(), starts_.end(), start) -
                                 starts_.begin()) -
             1;
  while (count > 0) {
    const int64_t offset = start - starts_[s];
    const int64_t n = std::min(count, segments_[s].size - offset);
    if (width_ == TokenWidth::kU16) {
      widen<uint16_t>(segments_[s].data, offset, n, out);
    } else {
      widen<uint32_t>(segments_[s].data, offset, n, out);
    }
    if (id_check_.limit > 0) {
      int64_t top = 0;
      for (int64_t i = 0; i < n; ++i) top = std::max(top, out[i]);
      if (top >= id_check_.limit) {
        const int64_t at =
            first_id_at_or_above(segments_[s].data, width_, offset, n, id_check_.limit);
        fail("data: {} holds id {} at position {}, outside the vocabulary [0, {}){}",
             segments_[s].source, out[at], offset + at, id_check_.limit, id_check_.advice);
      }
    }
    if (segments_[s].mapped)
      release_pages(segments_[s].data, segments_[s].size, offset, n, token_bytes(width_));
    out += n;
    start += n;
    count -= n;
    ++s;
  }
}

std::vector<int64_t> TokenSequence::to_vector() const {
  std::vector<int64_t> ids(static_cast<size_t>(size_));
  copy_to(0, size_, ids.data());
  return ids;
}

TokenSequenceBuilder::TokenSequenceBuilder(TokenWidth width, int64_t chunk_ids)
    : width_(width), chunk_ids_(chunk_ids) {
  ROTA_CHECK(chunk_ids > 0, "token sequence: chunks must hold at least one id");
}

namespace {

// Appends ids to the last chunk, opening chunks of `chunk_ids` capacity as they fill.
template <typename T>
void append_chunked(std::vector<std::vector<T>>& chunks, std::span<const int64_t> ids,
                    TokenWidth width, int64_t chunk_ids) {
  while (!ids.empty()) {
    if (chunks.empty() || static_cast<int64_t>(chunks.back().size()) == chunk_ids) {
      chunks.emplace_back();
      chunks.back().reserve(static_cast<size_t>(chunk_ids));
    }
    std::vector<T>& chunk = chunks.back();
    const size_t n = std::min(ids.size(), static_cast<size_t>(chunk_ids) - chunk.size());
    const size_t old = chunk.size();
    chunk.resize(old + n);
    narrow_ids(ids.first(n), width, chunk.data() + old);
    ids = ids.subspan(n);
  }
}

template <typename T>
std::shared_ptr<const TokenSequence> finish_chunks(std::vector<std::vector<T>>& chunks,
                                                   TokenWidth width) {
  auto owned = std::make_shared<std::vector<std::vector<T>>>(std::move(chunks));
  chunks.clear();
  if (!owned->empty()) owned->back().shrink_to_fit();  // the last chunk only: at most one chunk
  std::vector<TokenSequence::Segment> segments;
  for (const auto& chunk : *owned) {
    segments.push_back({chunk.data(), static_cast<int64_t>(chunk.size())});
  }
  return std::make_shared<const TokenSequence>(width, std::move(segments), owned);
}

}  // namespace

void TokenSequenceBuilder::append(std::span<const int64_t> ids) {
  if (width_ == TokenWidth::kU16) {
    append_chunked(u16_, ids, width_, chunk_ids_);
  } else {
    append_chunked(u32_, ids, width_, chunk_ids_);
  }
  size_ += static_cast<int64_t>(ids.size());
}

std::shared_ptr<const TokenSequence> TokenSequenceBuilder::finish() {
  size_ = 0;
  return width_ == TokenWidth::kU16 ? finish_chunks(u16_, width_) : finish_chunks(u32_, width_);
}

TokenStream make_token_stream(std::span<const int64_t> tokens) {
  const bool small =
      std::all_of(tokens.begin(), tokens.end(), [](int64_t id) { return id >= 0 && id < 65536; });
  TokenSequenceBuilder builder(small ? TokenWidth::kU16 : TokenWidth::kU32);
  builder.append(tokens);
  return builder.finish();
}

}  // namespace rota::data
