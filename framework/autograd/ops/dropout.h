// Differentiable dropout with a reproducible, thread-count independent mask.
#pragma once

#include "framework/autograd/variable.h"
#include "framework/tensor/random.h"

namespace rota {

/// Training (and p > 0): y = x * mask, mask_i = keep_i / (1 - p), keep_i ~ Bernoulli(1 - p).
/// One 64-bit seed is drawn from `gen` per call (so the same generator state gives the same
/// mask); the mask is regenerated from that seed in the backward instead of being stored, and
/// the backward is grad * mask. Not training, or p == 0: returns x itself and leaves `gen`
/// untouched. p must be in [0, 1).
Variable dropout(const Variable& x, double p, Generator& gen, bool training);

}  // namespace rota
