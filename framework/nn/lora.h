// Low-rank adapters on a model's Linear layers: choosing the layers by name, and merging them.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "framework/nn/linear.h"
#include "framework/nn/module.h"
#include "framework/tensor/random.h"
#include "framework/tensor/state_dict.h"

namespace rota::nn {

/// True when the module name `name` (dotted, e.g. "encoder.blocks.0.attn.q_proj") is selected
/// by `target`: equal to it, or ending in "." + target ("q_proj" selects every layer's q_proj,
/// "blocks.0.attn.q_proj" one of them).
bool lora_target_matches(const std::string& name, const std::string& target);

/// Adds a low-rank adapter (Linear::add_lora) to every Linear under `root` that a target
/// selects, and returns their module names in model order. Each adapter's A is drawn from
/// `init_gen` in that order; its dropout draws from `dropout_gen` (may be null when
/// options.dropout is 0). Throws, naming the target, when a target selects no module, selects a
/// module that is not a Linear, or selects one of `refused` (module names whose weight is read
/// outside Linear::forward, such as a language-model head fused with its loss), and when a
/// selected Linear already has an adapter.
std::vector<std::string> add_lora_adapters(Module& root, const std::vector<std::string>& targets,
                                           const LoraOptions& options, Generator& init_gen,
                                           std::shared_ptr<Generator> dropout_gen,
                                           const std::vector<std::string>& refused = {});

/// Folds every adapter of `state` into its weight and drops the adapter tensors:
/// "<m>.weight" [out, in] += scale · "<m>.lora_b" [out, r] · "<m>.lora_a" [r, in], the product
/// and sum formed in double and rounded once to the weight's dtype. The entries keep their
/// order. Returns the merged module names. Throws for an adapter without its partner or its
/// weight, and for shapes that do not chain.
std::vector<std::string> merge_lora_adapters(StateDict& state, double scale);

/// True when `state` holds any adapter tensor ("*.lora_a" or "*.lora_b").
bool has_lora_adapters(const StateDict& state);

}  // namespace rota::nn
