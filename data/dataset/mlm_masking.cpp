// MLM corruption.
#include "data/dataset/mlm_masking.h"

#include "data/dataset/batch.h"
#include "framework/base/error.h"

namespace rota::data {

MlmMasker::MlmMasker(const Tokenizer& tokenizer, MlmOptions options)
    : options_(options),
      mask_id_(tokenizer.specials().require(SpecialToken::kMask, "masked lm")),
      vocab_size_(tokenizer.vocab_size()),
      special_(static_cast<size_t>(tokenizer.vocab_size()), false) {
  ROTA_CHECK(options.select_rate >= 0 && options.select_rate <= 1,
             "masked lm: select_rate must be in [0, 1], got {}", options.select_rate);
  ROTA_CHECK(options.mask_rate >= 0 && options.random_rate >= 0 &&
                 options.mask_rate + options.random_rate <= 1,
             "masked lm: mask_rate {} and random_rate {} must be >= 0 with a sum <= 1",
             options.mask_rate, options.random_rate);
  for (SpecialToken kind : tokenizer.specials().kinds())
    special_[tokenizer.specials().id(kind)] = true;
  for (int64_t id = 0; id < vocab_size_; ++id) {
    if (!special_[id]) ordinary_ids_.push_back(id);
  }
  ROTA_CHECK(!ordinary_ids_.empty(), "masked lm: the tokenizer has no ordinary tokens");
}

int64_t MlmMasker::apply(std::span<int64_t> tokens, std::span<int64_t> targets,
                         Generator& gen) const {
  ROTA_CHECK(tokens.size() == targets.size(), "masked lm: {} tokens but {} targets", tokens.size(),
             targets.size());
  int64_t selected = 0;
  for (size_t i = 0; i < tokens.size(); ++i) {
    const int64_t id = tokens[i];
    ROTA_CHECK(id >= 0 && id < vocab_size_, "masked lm: token id {} outside [0, {})", id,
               vocab_size_);
    targets[i] = kIgnoreIndex;
    if (special_[id] || gen.next_double() >= options_.select_rate) continue;
    ++selected;
    targets[i] = id;
    const double choice = gen.next_double();
    if (choice < options_.mask_rate) {
      tokens[i] = mask_id_;
    } else if (choice < options_.mask_rate + options_.random_rate) {
      tokens[i] = ordinary_ids_[gen.next_below(ordinary_ids_.size())];
    }
  }
  return selected;
}

}  // namespace rota::data
