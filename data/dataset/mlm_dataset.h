// Masked-LM examples: windows of a token stream, corrupted with a seed per (epoch, window).
#pragma once

#include <span>

#include "data/dataset/batch.h"
#include "data/dataset/lm_dataset.h"
#include "data/dataset/mlm_masking.h"

namespace rota::data {

/// Window w holds stream[wC, wC + len) where C = T (or T - 1 with a leading <cls>), len = C
/// except for a partial last evaluation window (padded: mask 0, target kIgnoreIndex). The
/// masking of window w in epoch e uses a generator seeded from (seed, e, w), so a batch does
/// not depend on which other windows share it, on the rank that builds it, or on where
/// training resumed. Evaluate with a fixed epoch (e.g. 0) for a fixed corruption.
class MaskedLmDataset : public TokenWindows {
 public:
  /// cls_id >= 0 puts that token at position 0 of every window (never selected for masking).
  MaskedLmDataset(TokenStream tokens, int64_t seq_len, WindowMode mode, MlmMasker masker,
                  uint64_t seed, int64_t pad_id, int64_t cls_id = -1);

  /// tokens (corrupted), targets (original ids at selected positions), mask (1 real, 0 pad).
  LmBatch batch(std::span<const int64_t> indices, int64_t epoch) const;

 private:
  MlmMasker masker_;
  uint64_t seed_;
  int64_t cls_id_;
};

}  // namespace rota::data
