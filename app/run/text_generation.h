// Generated text for prompts × samples: stop strings, <eos>, each row's text as it streams.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "app/run/text_stream.h"
#include "data/tokenizer/tokenizer.h"
#include "models/generation.h"

namespace rota::app {

/// TextStream cut at stop strings. The continuation (the text after the prompt's) is searched
/// for every stop string as it grows; when one appears, the text before it is handed out and
/// nothing after. Until then only the characters that could still begin a stop string are held
/// back (the longest end of the continuation that is a proper prefix of one), so a stop string
/// split across tokens is found and never printed. Without stop strings it hands out exactly what
/// TextStream does.
class StopTextStream {
 public:
  /// stops: non-empty strings (refused: rota::Error).
  StopTextStream(const data::Tokenizer& tokenizer, std::vector<int64_t> prompt,
                 std::vector<std::string> stops);
  /// The prompt's text (call once, first).
  std::string start();
  /// Appends id; returns the text to print now (possibly empty; always empty once stopped).
  std::string push(int64_t id);
  /// The text still held back at the end of generation (empty once stopped).
  std::string finish();
  bool stopped() const { return stopped_; }
  /// The stop string found (the earliest in the text; the first given on a tie).
  const std::string& stop() const { return stop_; }
  /// The continuation handed out so far (after finish(): all of it, cut before the stop string).
  std::string continuation() const { return text_.substr(0, released_); }

 private:
  std::string advance(const std::string& added, bool final);

  TextStream stream_;
  std::vector<std::string> stops_;
  std::string text_;     // the continuation decoded so far (cut at the stop string once found)
  size_t released_ = 0;  // bytes of text_ handed out
  bool stopped_ = false;
  std::string stop_;
};

/// How `rota generate` and `Run.generate` continue prompts.
struct TextGenerationOptions {
  models::GenerationOptions sampling;  // sampling.seed: the seed of sample 0
  int64_t samples = 1;                 // continuations per prompt (seeds: models::sample_seed)
  std::vector<std::string> stops;      // stop strings (non-empty)
  bool stop_at_eos = false;            // end a continuation at the tokenizer's <eos>
};

/// One continuation of one prompt.
struct GeneratedText {
  int64_t prompt = 0;        // index of the prompt (0-based)
  int64_t sample = 0;        // 0 … samples − 1
  std::string text;          // what `rota generate` prints: the prompt's text and continuation
  std::string continuation;  // the continuation alone, cut before a stop string
  std::vector<int64_t> ids;  // the sampled ids (also those of a stop string, and <eos>)
  std::string stopped_by;    // "length" (options.sampling.tokens), "stop" or "eos"
  std::string stop;          // the stop string, when stopped_by is "stop"
};

/// Sees a row's text as it comes (row = prompt · samples + sample): first the prompt's text, then
/// pieces of the continuation.
using RowTextCallback = std::function<void(int64_t row, const std::string& text)>;

/// Every prompt × sample, decoded as rows of batches (models::generate_batch; the caller sets
/// eval mode and the precision), in row order. An <eos> ends a row only with stop_at_eos (its
/// text is not part of the continuation); a tokenizer without <eos> then is a RecipeError.
std::vector<GeneratedText> generate_texts(const models::CausalLm& model,
                                          const data::Tokenizer& tokenizer,
                                          const std::vector<std::vector<int64_t>>& prompts,
                                          const TextGenerationOptions& options,
                                          const RowTextCallback& on_text = {});

}  // namespace rota::app
