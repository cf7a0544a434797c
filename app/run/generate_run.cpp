// `rota generate` (see generate_run.h).
#include "app/run/generate_run.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "app/run/exit_codes.h"
#include "app/run/prompt.h"
#include "app/run/text_generation.h"
#include "app/setup/precision_setup.h"
#include "app/tasks/causal_lm_task.h"
#include "app/tasks/checkpoint_task.h"
#include "data/util/utf8.h"
#include "framework/io/log.h"
#include "recipes/recipe_error.h"

namespace rota::app {
namespace {

// All of text, also a NUL byte (a byte tokenizer may sample one; fputs would stop there).
void print(const std::string& text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
}

bool is_utf8(std::string_view text) {
  for (size_t pos = 0; pos < text.size();) {
    const size_t length = data::utf8_unit_length(text, pos);
    if (length == 1 && static_cast<unsigned char>(text[pos]) >= 0x80) return false;
    pos += length;
  }
  return true;
}

void check_request(const GenerateRequest& request) {
  if (!request.prompt.empty() && !request.prompts_file.empty()) {
    throw recipes::RecipeError("rota generate: --prompt and --prompts exclude each other");
  }
  if (request.tokens < 0) throw recipes::RecipeError("--tokens must be >= 0");
  if (!(std::isfinite(request.temperature) && request.temperature >= 0)) {
    throw recipes::RecipeError("--temperature must be a finite number >= 0");
  }
  if (request.top_k < 0) throw recipes::RecipeError("--top-k must be >= 0");
  if (!(request.top_p > 0 && request.top_p <= 1)) {
    throw recipes::RecipeError(fmt::format("--top-p must be in (0, 1], got {}", request.top_p));
  }
  if (!(std::isfinite(request.repetition_penalty) && request.repetition_penalty > 0)) {
    throw recipes::RecipeError(fmt::format(
        "--repetition-penalty must be a finite number > 0, got {}", request.repetition_penalty));
  }
  if (request.samples < 1) throw recipes::RecipeError("--samples must be >= 1");
  for (const std::string& stop : request.stops) {
    if (stop.empty()) throw recipes::RecipeError("--stop: an empty stop string");
  }
  if (request.format != "text" && request.format != "jsonl") {
    throw recipes::RecipeError("--format must be text or jsonl, got '" + request.format + "'");
  }
}

void write_records(const GenerateRequest& request, const std::vector<int64_t>& lines,
                   const std::vector<GeneratedText>& texts) {
  using json = nlohmann::ordered_json;
  for (size_t i = 0; i < texts.size(); ++i) {
    const GeneratedText& t = texts[i];
    if (request.format == "jsonl") {
      json record = {{"prompt", lines[t.prompt]},
                     {"sample", t.sample},
                     {"text", t.continuation},
                     {"tokens", t.ids.size()},
                     {"stopped_by", t.stopped_by}};
      if (t.stopped_by == "stop") record["stop"] = t.stop;
      print(record.dump(-1, ' ', false, json::error_handler_t::replace) + "\n");
    } else {
      print(fmt::format("{}==> prompt {}, sample {} <==\n{}\n", i > 0 ? "\n" : "", lines[t.prompt],
                        t.sample, t.text));
    }
  }
}

}  // namespace

std::vector<std::string> read_prompts_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw recipes::RecipeError("--prompts " + path + ": cannot open the file");
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  std::vector<std::string> prompts;
  size_t start = 0;
  for (int64_t line = 1; start < text.size(); ++line) {
    const size_t end = std::min(text.find('\n', start), text.size());
    std::string prompt = text.substr(start, end - start);
    if (!prompt.empty() && prompt.back() == '\r') prompt.pop_back();
    const std::string where = fmt::format("--prompts {}:{}", path, line);
    if (prompt.empty()) {
      throw recipes::RecipeError(where + ": an empty line (the file holds one prompt per line)");
    }
    if (!is_utf8(prompt)) throw recipes::RecipeError(where + ": the line is not valid UTF-8");
    prompts.push_back(std::move(prompt));
    start = end + 1;
  }
  if (prompts.empty()) throw recipes::RecipeError("--prompts " + path + ": the file is empty");
  return prompts;
}

int run_generation(const GenerateRequest& request) {
  io::init_logging_from_env();
  check_request(request);
  const std::vector<std::string> prompt_texts = request.prompts_file.empty()
                                                    ? std::vector<std::string>{request.prompt}
                                                    : read_prompts_file(request.prompts_file);
  CheckpointTask loaded = load_checkpoint_task(request.checkpoint);
  auto* causal = dynamic_cast<CausalLmTask*>(loaded.task.get());
  if (!causal) {
    throw recipes::RecipeError(
        "rota generate: " + loaded.checkpoint_dir.string() +
        " is not a causal language model (generation needs model.kind CAUSAL_LM)");
  }
  // The precision the model was trained in (train.dtype).
  const MatmulPrecisionGuard precision(precision_from_recipe(causal->recipe()));
  report_precision(matmul_precision());
  const data::Tokenizer& tokenizer = causal->tokenizer();
  std::vector<std::vector<int64_t>> prompts;
  std::vector<int64_t> lines;  // the prompt's line in the file (1 for --prompt)
  for (size_t i = 0; i < prompt_texts.size(); ++i) {
    prompts.push_back(encode_prompt(tokenizer, prompt_texts[i]));
    lines.push_back(static_cast<int64_t>(i) + 1);
    if (prompts.back().empty()) {
      throw recipes::RecipeError(
          request.prompts_file.empty()
              ? std::string("--prompt: the prompt encodes to no tokens")
              : fmt::format("--prompts {}:{}: the prompt encodes to no tokens",
                            request.prompts_file, i + 1));
    }
  }
  TextGenerationOptions options;
  options.sampling.tokens = request.tokens;
  options.sampling.temperature = request.temperature;
  options.sampling.top_k = request.top_k;
  options.sampling.top_p = request.top_p;
  options.sampling.repetition_penalty = request.repetition_penalty;
  options.sampling.seed = request.seed;
  options.samples = request.samples;
  options.stops = request.stops;
  options.stop_at_eos = request.stop_at_eos;
  if (prompts.size() == 1 && request.samples == 1 && request.format == "text") {
    // Stream the text as it is generated, as one decode of the whole sequence would print it.
    generate_texts(causal->causal_lm(), tokenizer, prompts, options,
                   [](int64_t, const std::string& text) {
                     print(text);
                     std::fflush(stdout);
                   });
    std::fputs("\n", stdout);
    return kExitOk;
  }
  write_records(request, lines, generate_texts(causal->causal_lm(), tokenizer, prompts, options));
  return kExitOk;
}

}  // namespace rota::app
