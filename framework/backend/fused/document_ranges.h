// Packed batches: the documents of each row, from segment ids, for kernels that keep attention
// (and its state) inside one document.
#pragma once

#include <cstdint>
#include <vector>

#include "framework/tensor/tensor.h"

namespace rota::backend {

/// Rows [start, end) of one document in a packed row.
struct DocumentRange {
  int64_t start = 0;
  int64_t end = 0;
};

/// The documents of every row of a packed batch, read from segment ids [B, N] (an integer
/// dtype, one id per token; a row's tokens with the same id form one document and must be
/// contiguous). A kernel over G = B·H slices of [..., N, ...] finds slice g's row at g / H.
class DocumentRanges {
 public:
  /// No segment ids (undefined): one document per row, nothing to split.
  DocumentRanges() = default;
  /// Checks segment_ids against `groups` slices of length n (B must divide G; N must be n) and
  /// that every id's tokens are contiguous in its row; errors name `op`.
  DocumentRanges(const char* op, const Tensor& segment_ids, int64_t groups, int64_t n);
  bool empty() const { return rows_.empty(); }
  /// The documents of slice g, in order, covering [0, N).
  const std::vector<DocumentRange>& of_slice(int64_t g) const { return rows_[g / per_row_]; }

 private:
  std::vector<std::vector<DocumentRange>> rows_;  // [B] rows of ranges
  int64_t per_row_ = 1;                           // H: slices per row
};

/// Calls run(first row, dims of the document's rows, is_first, is_last) for each document of
/// slice g, or once for the whole slice without segment ids. Dims: a kernel's dimensions with
/// the sequence length in `n`. A packed row's documents never see each other: each one is run
/// as a sequence of its own (its chunks start at its first row); a carried state S₀ belongs to
/// the first document and S_N to the last.
template <typename Dims, typename Run>
void for_each_document(const DocumentRanges& docs, int64_t g, const Dims& s, Run&& run) {
  if (docs.empty()) return run(int64_t{0}, s, true, true);
  const std::vector<DocumentRange>& ranges = docs.of_slice(g);
  for (size_t r = 0; r < ranges.size(); ++r) {
    Dims part = s;
    part.n = ranges[r].end - ranges[r].start;
    run(ranges[r].start, part, r == 0, r + 1 == ranges.size());
  }
}

/// A kernel's row view (first row `at`, rows `ld` apart) from row `first` on.
template <typename RowView>
RowView from_row(RowView rows, int64_t first) {
  rows.at += first * rows.ld;
  return rows;
}

}  // namespace rota::backend
