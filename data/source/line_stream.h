// Reading files in blocks, cutting bytes into lines, and gathering lines into bounded pieces.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

namespace rota::data {

/// Lines and records longer than this are refused (a missing newline or an unclosed quote
/// must not make memory grow with the file).
inline constexpr size_t kMaxRecordBytes = size_t{256} << 20;

/// Reads a file in blocks of `block_bytes` (the last may be shorter), never holding it whole.
void for_each_block(const std::filesystem::path& file, size_t block_bytes,
                    const std::function<void(std::string_view block)>& visit);

/// Cuts a byte stream, fed in chunks of any size, into lines: each ends with '\n' except
/// possibly the last (emitted by finish()). A line over kMaxRecordBytes is an error naming
/// `source`.
class LineSplitter {
 public:
  using Emit = std::function<void(std::string_view line)>;
  LineSplitter(std::string source, Emit emit)
      : source_(std::move(source)), emit_(std::move(emit)) {}
  void feed(std::string_view bytes);
  void finish();
  /// Bytes fed so far end with '\n' (or nothing was fed).
  bool at_line_start() const { return partial_.empty() && (fed_ == 0 || last_ == '\n'); }
  bool empty() const { return fed_ == 0; }

 private:
  std::string source_;
  Emit emit_;
  std::string partial_;
  size_t fed_ = 0;
  char last_ = 0;
};

/// Gathers whole units (lines, or records) into pieces of at most max_piece_bytes: a piece is
/// the longest run of consecutive units that fits, or one unit alone when it is longer. This is
/// Corpus::for_each_text_piece's contract.
class PieceBuilder {
 public:
  using Visit = std::function<void(std::string_view piece)>;
  PieceBuilder(size_t max_piece_bytes, const Visit& visit);
  void add(std::string_view unit);
  void finish();

 private:
  size_t max_;
  const Visit& visit_;
  std::string piece_;
};

}  // namespace rota::data
