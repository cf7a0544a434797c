// Token streams of the LM tasks: encoded text or a prepared directory (see lm_token_source.h).
#include "app/tasks/lm_token_source.h"

#include "app/tasks/task.h"
#include "data/prepared/split_encoder.h"
#include "framework/base/error.h"
#include "framework/io/log.h"

namespace rota::app {

const data::PreparedCorpus& LmTokenSource::prepared() {
  if (!prepared_) {
    prepared_.emplace(data::PreparedCorpus::open(task_.recipe().data().prepared()));
    prepared_->check_tokenizer(task_.tokenizer());
  }
  return *prepared_;
}

std::string LmTokenSource::source_name() const {
  const recipes::Data& d = task_.recipe().data();
  return d.has_prepared() ? d.prepared() : task_.corpus().name();
}

data::TokenStream LmTokenSource::split(const std::string& name, int64_t min_tokens) {
  auto it = streams_.find(name);
  if (it != streams_.end()) return it->second;
  data::TokenStream stream;
  if (task_.recipe().data().has_prepared()) {
    stream = prepared().split_stream(name);
  } else {
    const data::Tokenizer& tokenizer = task_.tokenizer();
    data::TokenSequenceBuilder builder(data::token_width_for_vocab(tokenizer.vocab_size()));
    data::EncodeOptions options;
    options.documents = task_.documents().boundary;
    options.document_end_token = task_.documents().separator;
    data::encode_split(task_.corpus(), name, tokenizer, options,
                       [&](std::span<const int64_t> ids) { builder.append(ids); });
    stream = builder.finish();
  }
  ROTA_CHECK(stream->size() >= min_tokens,
             "data: the {} split of '{}' has {} tokens; need at least {}", name, source_name(),
             stream->size(), min_tokens);
  io::log_info("data: {} split: {} tokens", name, stream->size());
  streams_.emplace(name, stream);
  return stream;
}

std::string prepared_validation_split(const std::string& dir) {
  const data::PreparedCorpus corpus = data::PreparedCorpus::open(dir);
  for (const char* name : {"valid", "validation", "dev"}) {
    if (corpus.has_split(name)) return name;
  }
  fail("data: the prepared corpus {} has no validation split (valid)", dir);
}

}  // namespace rota::app
