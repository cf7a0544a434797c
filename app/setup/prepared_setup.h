// The tokenizer of a recipe that trains on a prepared directory (data.prepared).
#pragma once

#include <memory>

#include "data/tokenizer/tokenizer.h"
#include "recipes/recipe.pb.h"

namespace rota::app {

/// The tokenizer saved in data.prepared's directory (opened and checked: manifest, shard
/// sizes, tokenizer digest). data.tokenizer's build options (kind, vocab_size, ...) are not
/// consulted: the ids were made with this tokenizer, so no other can be used.
std::shared_ptr<const data::Tokenizer> prepared_tokenizer(const recipes::Recipe& recipe);

}  // namespace rota::app
