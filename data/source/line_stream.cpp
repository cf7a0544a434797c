// Block reading, line cutting and piece gathering.
#include "data/source/line_stream.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "framework/base/error.h"

namespace rota::data {

void for_each_block(const std::filesystem::path& file, size_t block_bytes,
                    const std::function<void(std::string_view block)>& visit) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> in(std::fopen(file.c_str(), "rb"), &std::fclose);
  ROTA_CHECK(in != nullptr, "data: cannot open {}: {}", file.string(), std::strerror(errno));
  std::vector<char> buffer(block_bytes);
  while (true) {
    const size_t got = std::fread(buffer.data(), 1, buffer.size(), in.get());
    if (got > 0) visit(std::string_view(buffer.data(), got));
    if (got < buffer.size()) {
      ROTA_CHECK(!std::ferror(in.get()), "data: error reading {}", file.string());
      return;
    }
  }
}

void LineSplitter::feed(std::string_view bytes) {
  if (bytes.empty()) return;
  fed_ += bytes.size();
  last_ = bytes.back();
  size_t pos = 0;
  while (pos < bytes.size()) {
    const size_t end = bytes.find('\n', pos);
    if (end == std::string_view::npos) {
      partial_.append(bytes.substr(pos));
      ROTA_CHECK(partial_.size() <= kMaxRecordBytes,
                 "data: {}: a line longer than {} MiB (is this a text file with line breaks?)",
                 source_, kMaxRecordBytes >> 20);
      return;
    }
    const std::string_view line = bytes.substr(pos, end + 1 - pos);
    if (partial_.empty()) {
      emit_(line);
    } else {
      partial_.append(line);
      emit_(partial_);
      partial_.clear();
    }
    pos = end + 1;
  }
}

void LineSplitter::finish() {
  if (!partial_.empty()) emit_(partial_);
  partial_.clear();
}

PieceBuilder::PieceBuilder(size_t max_piece_bytes, const Visit& visit)
    : max_(max_piece_bytes), visit_(visit) {
  ROTA_CHECK(max_piece_bytes > 0, "data: for_each_text_piece needs max_piece_bytes > 0");
}

void PieceBuilder::add(std::string_view unit) {
  if (unit.empty()) return;
  if (piece_.size() + unit.size() <= max_) {
    piece_.append(unit);
    return;
  }
  if (!piece_.empty()) {
    visit_(piece_);
    piece_.clear();
  }
  if (unit.size() > max_) {
    visit_(unit);
  } else {
    piece_.assign(unit);
  }
}

void PieceBuilder::finish() {
  if (!piece_.empty()) visit_(piece_);
  piece_.clear();
}

}  // namespace rota::data
