// Resolving a recipe: every setting that applies made explicit, so a run says exactly what ran.
#pragma once

#include "recipes/recipe.pb.h"

namespace rota::recipes {

/// Fills in, for every field that applies (see applicability.h):
/// - the schema's `[default = ...]` values;
/// - the derived defaults: model.ffn_width (default_ffn_width), softmax.scale = 1/√D,
///   t5.bidirectional = (kind != CAUSAL_LM), train.best_metric (LOSS for language models, MCC
///   for cola, ACCURACY for other classifiers), shaw.clip_left/right = clip,
///   transformer_xl.pe_width = width;
/// - the default oneof members: `attention { linear {} }`, `optimizer { adamw {} }`.
/// Sections whose absence means "off" (finetune, train.sample, softmax.streaming, data.tsv) are
/// filled only when present; fields that do not apply are left as they are (validation
/// reports them when set). Derived values are skipped while their inputs are invalid (e.g.
/// heads = 0), so validation reports the cause. Idempotent.
///
/// Note: a resolved recipe pins derived values. Loading a resolved recipe with
/// `--set model.width=512` keeps its old ffn_width; override the original recipe instead.
void resolve_recipe(Recipe& recipe);

/// What an unset model.ffn_width means: 4 × width, or for a gated FFN (ffn_activation SWIGLU or
/// GEGLU) the parameter-matched 8/3 × width rounded up to a multiple of 8 (⌈width/3⌉·8: its
/// three width × F matrices hold about as many weights as two width × 4·width ones). width must
/// be in [1, INT_MAX / 4].
int default_ffn_width(const Model& model);

}  // namespace rota::recipes
