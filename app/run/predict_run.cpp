// `rota predict` (see predict_run.h).
#include "app/run/predict_run.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "app/run/exit_codes.h"
#include "app/run/lm_line_scores.h"
#include "app/run/prediction_inputs.h"
#include "app/setup/document_setup.h"
#include "app/setup/precision_setup.h"
#include "app/tasks/causal_lm_task.h"
#include "app/tasks/checkpoint_task.h"
#include "app/tasks/classifier_task.h"
#include "app/tasks/masked_lm_task.h"
#include "data/dataset/classification_dataset.h"
#include "framework/autograd/grad_mode.h"
#include "framework/base/file_io.h"
#include "framework/io/log.h"
#include "recipes/recipe_error.h"

namespace rota::app {
namespace {

using nlohmann::json;

// Where the JSON lines go: standard output, or a file replaced atomically at the end.
class PredictionSink {
 public:
  explicit PredictionSink(const std::string& output) {
    if (!output.empty()) writer_ = std::make_unique<AtomicFileWriter>(output);
  }
  void write(const json& record) {
    // Token texts and labels are shown as text: a byte that is not UTF-8 shows as U+FFFD
    // (the scores are unaffected).
    const std::string line = record.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
    if (writer_) {
      writer_->write(line);
    } else {
      std::fputs(line.c_str(), stdout);
    }
  }
  void finish() {
    if (writer_) writer_->commit();
    std::fflush(stdout);
  }

 private:
  std::unique_ptr<AtomicFileWriter> writer_;
};

// The texts of the examples as a one- or two-column table (no labels) for the classifier.
data::TsvTable example_table(const std::vector<PredictionExample>& examples, bool pairs,
                             const std::string& source) {
  data::TsvTable table;
  table.source = source;
  table.columns =
      pairs ? std::vector<std::string>{"text", "text_pair"} : std::vector<std::string>{"text"};
  for (const PredictionExample& example : examples) {
    table.rows.push_back(pairs ? std::vector<std::string>{example.text, example.text_pair}
                               : std::vector<std::string>{example.text});
    table.line_numbers.push_back(example.line);
  }
  return table;
}

void predict_classes(ClassifierTask& task, const std::vector<PredictionExample>& examples,
                     bool pairs, const PredictRequest& request, PredictionSink& sink) {
  const data::Tokenizer& tokenizer = task.tokenizer();
  data::ClassificationOptions options;
  options.text_columns =
      pairs ? std::vector<std::string>{"text", "text_pair"} : std::vector<std::string>{"text"};
  options.label_column = "";
  options.max_length = task.recipe().data().sequence_length();
  options.num_classes = task.recipe().model().classifier().num_classes();
  options.add_cls = tokenizer.specials().has(data::SpecialToken::kCls);
  options.add_sep = tokenizer.specials().has(data::SpecialToken::kSep);
  const data::ClassificationDataset dataset(example_table(examples, pairs, request.input),
                                            tokenizer, options);
  const std::vector<std::string> names = task.label_names();
  const int64_t classes = static_cast<int64_t>(names.size());
  for (int64_t first = 0; first < dataset.size(); first += request.batch_size) {
    std::vector<int64_t> indices;
    for (int64_t i = first; i < std::min(dataset.size(), first + request.batch_size); ++i)
      indices.push_back(i);
    const data::ClassificationBatch batch = dataset.batch(indices);
    const Tensor logits = task.classifier().forward(batch.tokens, batch.mask).data().contiguous();
    ROTA_CHECK(logits.size(1) == classes, "predict: the model has {} classes but {} label names",
               logits.size(1), classes);
    const float* scores = logits.data<float>();
    for (size_t b = 0; b < indices.size(); ++b) {
      const float* row = scores + static_cast<int64_t>(b) * classes;
      double top = -std::numeric_limits<double>::infinity();
      int64_t best = 0;
      for (int64_t c = 0; c < classes; ++c) {
        if (row[c] > top) top = row[c], best = c;
      }
      double total = 0;
      for (int64_t c = 0; c < classes; ++c) total += std::exp(row[c] - top);
      json probabilities = json::object();
      for (int64_t c = 0; c < classes; ++c) {
        probabilities[names[static_cast<size_t>(c)]] = std::exp(row[c] - top) / total;
      }
      sink.write({{"line", examples[static_cast<size_t>(indices[b])].line},
                  {"label", names[static_cast<size_t>(best)]},
                  {"class", best},
                  {"probabilities", probabilities}});
    }
  }
}

void write_line_scores(const data::Tokenizer& tokenizer,
                       const std::vector<PredictionExample>& examples,
                       const std::vector<LineScore>& scores, bool pseudo,
                       const PredictRequest& request, PredictionSink& sink) {
  const char* logprob_key = pseudo ? "pseudo_logprob" : "logprob";
  const char* ppl_key = pseudo ? "pseudo_ppl" : "ppl";
  for (size_t i = 0; i < examples.size(); ++i) {
    const LineScore& score = scores[i];
    json record = {{"line", examples[i].line},
                   {"tokens", static_cast<int64_t>(score.ids.size())},
                   {"scored", score.scored}};
    record[logprob_key] = score.logprob_sum;
    // No scored token: no perplexity (JSON null).
    record[ppl_key] =
        score.scored > 0 ? json(std::exp(-score.logprob_sum / score.scored)) : json(nullptr);
    if (request.token_details) {
      json tokens = json::array();
      for (size_t t = 0; t < score.ids.size(); ++t) {
        tokens.push_back(
            {{"id", score.ids[t]},
             {"text", tokenizer.token_text(score.ids[t])},
             {"logprob", score.scored_mask[t] ? json(score.token_logprobs[t]) : json(nullptr)}});
      }
      record["token_logprobs"] = tokens;
    }
    sink.write(record);
  }
}

// The fields of the input's records: the request's, else the run's own (data.files or the TSV
// columns of its recipe) for structured input, else "text".
struct InputFields {
  std::string text;
  std::string text_pair;
};

InputFields input_fields(const PredictRequest& request, const recipes::Data& data,
                         data::FileFormat format) {
  InputFields fields{request.text_field, request.text_pair_field};
  if (!fields.text.empty() || format == data::FileFormat::kText) {
    if (fields.text.empty()) fields.text = "text";
    return fields;
  }
  if (data.has_files()) {
    fields.text = data.files().text_field();
    if (fields.text_pair.empty() && data.files().has_text_pair_field())
      fields.text_pair = data.files().text_pair_field();
  } else if (data.has_tsv()) {
    fields.text = data.tsv().text();
    if (fields.text_pair.empty() && data.tsv().has_text_pair())
      fields.text_pair = data.tsv().text_pair();
  } else {
    fields.text = "text";
  }
  return fields;
}

}  // namespace

int run_prediction(const PredictRequest& request) {
  io::init_logging_from_env();
  if (request.batch_size < 1) throw recipes::RecipeError("--batch-size must be >= 1");
  const data::FileFormat format = prediction_format(request.input, request.format);
  CheckpointTask loaded = load_checkpoint_task(request.checkpoint);
  Task& task = *loaded.task;
  const InputFields fields = input_fields(request, task.recipe().data(), format);
  const std::vector<PredictionExample> examples =
      read_prediction_examples(request.input, format, fields.text, fields.text_pair);
  io::log_info("predict: checkpoint={} step={} examples={}", loaded.checkpoint_dir.string(),
               loaded.state.step(), examples.size());
  const MatmulPrecisionGuard precision(precision_from_recipe(task.recipe()));
  NoGradGuard no_grad;
  PredictionSink sink(request.output);
  if (auto* classifier = dynamic_cast<ClassifierTask*>(&task)) {
    predict_classes(*classifier, examples, !fields.text_pair.empty(), request, sink);
  } else if (auto* causal = dynamic_cast<CausalLmTask*>(&task)) {
    std::vector<std::string> texts;
    for (const PredictionExample& example : examples) texts.push_back(example.text);
    // A line reads as a record when each training record was a document, else as a line.
    const recipes::Recipe& recipe = causal->recipe();
    const int64_t record_separator = document_boundary(recipe) == data::DocumentBoundary::kRecords
                                         ? document_separator_token(recipe, causal->tokenizer())
                                         : -1;
    const std::vector<LineScore> scores =
        causal_line_scores(causal->causal_lm(), causal->tokenizer(), texts,
                           causal_line_context(causal->tokenizer(), record_separator),
                           recipe.data().sequence_length(), request.batch_size);
    write_line_scores(task.tokenizer(), examples, scores, false, request, sink);
  } else if (auto* masked = dynamic_cast<MaskedLmTask*>(&task)) {
    std::vector<std::string> texts;
    for (const PredictionExample& example : examples) texts.push_back(example.text);
    const std::vector<LineScore> scores =
        masked_line_scores(masked->masked_lm(), masked->tokenizer(), texts,
                           masked->recipe().data().sequence_length(), request.batch_size);
    write_line_scores(task.tokenizer(), examples, scores, true, request, sink);
  } else {
    fail("predict: unknown task kind");
  }
  sink.finish();
  return kExitOk;
}

}  // namespace rota::app
