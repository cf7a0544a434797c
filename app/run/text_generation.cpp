// Prompts × samples to text, cut at stop strings or <eos> (see text_generation.h).
#include "app/run/text_generation.h"

#include <algorithm>
#include <utility>

#include "framework/base/error.h"
#include "framework/io/log.h"
#include "recipes/recipe_error.h"

namespace rota::app {

StopTextStream::StopTextStream(const data::Tokenizer& tokenizer, std::vector<int64_t> prompt,
                               std::vector<std::string> stops)
    : stream_(tokenizer, std::move(prompt)), stops_(std::move(stops)) {
  for (const std::string& stop : stops_) {
    ROTA_CHECK(!stop.empty(), "generate: an empty stop string (it would stop before any text)");
  }
}

std::string StopTextStream::start() {
  return stream_.start();
}

std::string StopTextStream::push(int64_t id) {
  if (stopped_) return "";
  return advance(stream_.push(id), false);
}

std::string StopTextStream::finish() {
  if (stopped_) return "";
  return advance(stream_.finish(), true);
}

std::string StopTextStream::advance(const std::string& added, bool final) {
  text_ += added;
  // A stop string cannot begin in the text already handed out (its start would have been held
  // back), so the search starts there.
  size_t first = std::string::npos;
  for (const std::string& stop : stops_) {
    const size_t at = text_.find(stop, released_);
    if (at < first) {
      first = at;
      stop_ = stop;
    }
  }
  if (first != std::string::npos) {
    std::string out = text_.substr(released_, first - released_);
    text_.resize(first);
    released_ = first;
    stopped_ = true;
    return out;
  }
  // Hold back the longest end of the continuation that a stop string begins with.
  size_t hold = 0;
  if (!final) {
    const size_t open = text_.size() - released_;
    for (const std::string& stop : stops_) {
      for (size_t k = std::min(stop.size() - 1, open); k > hold; --k) {
        if (text_.compare(text_.size() - k, k, stop, 0, k) == 0) {
          hold = k;
          break;
        }
      }
    }
  }
  const size_t end = text_.size() - hold;
  std::string out = text_.substr(released_, end - released_);
  released_ = end;
  return out;
}

std::vector<GeneratedText> generate_texts(const models::CausalLm& model,
                                          const data::Tokenizer& tokenizer,
                                          const std::vector<std::vector<int64_t>>& prompts,
                                          const TextGenerationOptions& options,
                                          const RowTextCallback& on_text) {
  ROTA_CHECK(options.samples >= 1, "generate: samples must be >= 1, got {}", options.samples);
  models::check_generation_options(options.sampling);
  int64_t eos = -1;
  if (options.stop_at_eos) {
    if (!tokenizer.specials().has(data::SpecialToken::kEos)) {
      throw recipes::RecipeError(
          "generate: stop at <eos> (--stop-at-eos, stop_at_eos=True): the run's " +
          tokenizer.kind() + " tokenizer has no <eos> token");
    }
    eos = tokenizer.specials().id(data::SpecialToken::kEos);
  }
  std::vector<models::GenerationRow> rows;
  std::vector<GeneratedText> out;
  std::vector<StopTextStream> streams;
  std::vector<std::string> prompt_texts;
  for (size_t p = 0; p < prompts.size(); ++p) {
    for (int64_t s = 0; s < options.samples; ++s) {
      rows.push_back({prompts[p], models::sample_seed(options.sampling.seed, s)});
      GeneratedText& text = out.emplace_back();
      text.prompt = static_cast<int64_t>(p);
      text.sample = s;
      text.stopped_by = "length";
      streams.emplace_back(tokenizer, prompts[p], options.stops);
    }
  }
  for (size_t row = 0; row < rows.size(); ++row) {
    prompt_texts.push_back(streams[row].start());
    if (on_text) on_text(static_cast<int64_t>(row), prompt_texts.back());
  }
  models::GenerationStats stats;
  // A model with more output rows than the tokenizer has ids (model.vocab_size) never samples
  // the ids the tokenizer cannot decode.
  models::GenerationOptions sampling = options.sampling;
  sampling.vocab_limit = tokenizer.vocab_size();
  const std::vector<std::vector<int64_t>> ids = models::generate_batch(
      model, rows, sampling,
      [&](int64_t row, int64_t id) {
        if (id == eos) {
          out[row].stopped_by = "eos";
          return false;
        }
        const std::string piece = streams[row].push(id);
        if (on_text) on_text(row, piece);
        if (!streams[row].stopped()) return true;
        out[row].stopped_by = "stop";
        out[row].stop = streams[row].stop();
        return false;
      },
      &stats);
  if (rows.size() > 1) {
    io::log_info("generate: {} continuations decoded in {} batch{} of up to {} rows, {} model {}",
                 rows.size(), stats.batches, stats.batches == 1 ? "" : "es", stats.rows_per_batch,
                 stats.model_calls, model.supports_step() ? "steps" : "forward passes");
  }
  for (size_t row = 0; row < rows.size(); ++row) {
    const std::string rest = streams[row].finish();
    if (on_text && !rest.empty()) on_text(static_cast<int64_t>(row), rest);
    out[row].ids = ids[row];
    out[row].continuation = streams[row].continuation();
    out[row].text = prompt_texts[row] + out[row].continuation;
  }
  return out;
}

}  // namespace rota::app
