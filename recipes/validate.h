// Validation of a recipe: value ranges and cross-field rules, each problem with its field path.
#pragma once

#include <string>
#include <vector>

#include "recipes/recipe.pb.h"

namespace rota::recipes {

/// One problem: the dotted path of the field at fault ("model.heads", "finetune.freeze[1]")
/// and what is wrong with it ("width 250 is not divisible by heads 4").
struct Issue {
  std::string path;
  std::string message;
};

/// Every problem of `recipe`, in schema order; empty when it is valid. Meant for a resolved
/// recipe (resolve_recipe), where every applicable value is explicit; on an unresolved one the
/// getters' schema defaults are checked and derived defaults are skipped. Checks, among others:
/// ranges of every number; width divisible by heads; exactly one of train.steps / epochs;
/// the attention family of each encoding (LRPE, PermuteFormer: linear; Shaw, XL, skew, T5,
/// ALiBi: softmax); the denominator only with non-negative features; MASKED_LM and CLASSIFIER
/// need an encoding that works bidirectionally; a classifier needs num_classes and TSV data,
/// language models need text; learned_absolute.max_positions and skew.max_len cover
/// data.sequence_length; data.batch_size divisible by train.gradient_accumulation; fields that
/// do not apply (applicability.h) are not set.
std::vector<Issue> validate_recipe(const Recipe& recipe);

/// Why `model` cannot run a sequence in segments with the attention state carried between them
/// (train.segment_length), or "" when it can (a CAUSAL_LM whose blocks are all linear
/// attention; the kind is not checked).
std::string segment_refusal(const Model& model);

/// Choices that are valid but probably not what was meant, to print as warnings: a
/// bidirectional model without positions (NoPE) cannot tell word order — a bag-of-words
/// baseline, legitimate in an ablation.
std::vector<Issue> recipe_warnings(const Recipe& recipe);

}  // namespace rota::recipes
