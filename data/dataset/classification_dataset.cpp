// Classification examples from TSV rows.
#include "data/dataset/classification_dataset.h"

#include <algorithm>
#include <charconv>

#include "framework/base/error.h"

namespace rota::data {

namespace {

std::string_view trim(std::string_view text) {
  const size_t begin = text.find_first_not_of(" \t\r\n\v\f");
  if (begin == std::string_view::npos) return {};
  const size_t end = text.find_last_not_of(" \t\r\n\v\f");
  return text.substr(begin, end - begin + 1);
}

int64_t parse_label(const TsvTable& table, size_t row, const std::string& field) {
  int64_t value = -1;
  const auto [end, error] = std::from_chars(field.data(), field.data() + field.size(), value);
  ROTA_CHECK(error == std::errc() && end == field.data() + field.size() && value >= 0,
             "classification: {}:{}: label '{}' is not a non-negative integer", table.source,
             table.line_numbers[row], field);
  return value;
}

}  // namespace

ClassificationDataset::ClassificationDataset(const TsvTable& table, const Tokenizer& tokenizer,
                                             const ClassificationOptions& options)
    : labeled_(!options.label_column.empty()),
      pad_id_(padding_id(tokenizer)),
      max_length_(options.max_length),
      pad_to_max_length_(options.pad_to_max_length) {
  const size_t texts = options.text_columns.size();
  ROTA_CHECK(texts == 1 || texts == 2, "classification: 1 or 2 text columns, got {}", texts);
  if (options.add_cls) tokenizer.specials().require(SpecialToken::kCls, "classification");
  if (texts == 2 && options.add_sep) {
    tokenizer.specials().require(SpecialToken::kSep, "classification");
  }
  std::vector<int64_t> columns;
  for (const std::string& name : options.text_columns) columns.push_back(table.column(name));
  const int64_t label_column = labeled_ ? table.column(options.label_column) : -1;
  std::vector<TextExample> examples(table.rows.size());
  for (size_t r = 0; r < table.rows.size(); ++r) {
    TextExample& example = examples[r];
    example.text = table.rows[r][columns[0]];
    if (texts == 2) example.text_pair = table.rows[r][columns[1]];
    example.label = labeled_ ? parse_label(table, r, table.rows[r][label_column]) : kIgnoreIndex;
    example.origin = table.source + ":" + std::to_string(table.line_numbers[r]);
  }
  build(examples, tokenizer, options, table.source);
}

ClassificationDataset::ClassificationDataset(const std::vector<TextExample>& examples,
                                             const Tokenizer& tokenizer,
                                             const ClassificationOptions& options)
    : labeled_(!options.label_column.empty()),
      pad_id_(padding_id(tokenizer)),
      max_length_(options.max_length),
      pad_to_max_length_(options.pad_to_max_length) {
  build(examples, tokenizer, options,
        examples.empty() ? std::string("<no examples>") : examples.front().origin);
}

void ClassificationDataset::build(const std::vector<TextExample>& examples,
                                  const Tokenizer& tokenizer, const ClassificationOptions& options,
                                  const std::string& source) {
  const size_t texts = options.text_columns.size();
  ROTA_CHECK(texts == 1 || texts == 2, "classification: 1 or 2 text columns, got {}", texts);
  const int64_t cls =
      options.add_cls ? tokenizer.specials().require(SpecialToken::kCls, "classification") : -1;
  const int64_t sep = texts == 2 && options.add_sep
                          ? tokenizer.specials().require(SpecialToken::kSep, "classification")
                          : -1;
  const int64_t reserved = (cls >= 0) + (sep >= 0);
  ROTA_CHECK(options.max_length > reserved + static_cast<int64_t>(texts) - 1,
             "classification: max_length {} leaves no room for text", options.max_length);

  int64_t max_label = -1;
  for (const TextExample& example : examples) {
    std::vector<int64_t> parts[2];
    for (size_t t = 0; t < texts; ++t) {
      const std::string& text = t == 0 ? example.text : example.text_pair;
      try {
        parts[t] = tokenizer.encode(trim(text));
      } catch (const Error& e) {
        fail("data: {}: {}", example.origin, e.what());
      }
    }
    // Longest-first truncation of the texts to the room left by the special tokens.
    const int64_t room = options.max_length - reserved;
    bool truncated = false;
    while (static_cast<int64_t>(parts[0].size() + (texts == 2 ? parts[1].size() : 0)) > room) {
      std::vector<int64_t>& longer =
          (texts == 2 && parts[1].size() > parts[0].size()) ? parts[1] : parts[0];
      longer.pop_back();
      truncated = true;
    }
    truncated_ += truncated;
    std::vector<int64_t> sequence;
    if (cls >= 0) sequence.push_back(cls);
    sequence.insert(sequence.end(), parts[0].begin(), parts[0].end());
    if (texts == 2) {
      if (sep >= 0) sequence.push_back(sep);
      sequence.insert(sequence.end(), parts[1].begin(), parts[1].end());
    }
    sequences_.push_back(std::move(sequence));
    const int64_t label = labeled_ ? example.label : kIgnoreIndex;
    max_label = std::max(max_label, label);
    labels_.push_back(label);
  }
  num_classes_ =
      options.num_classes > 0 ? options.num_classes : std::max<int64_t>(2, max_label + 1);
  ROTA_CHECK(max_label < num_classes_, "classification: {} has label {} but num_classes is {}",
             source, max_label, num_classes_);
}

ClassificationDataset ClassificationDataset::from_corpus(const Corpus& corpus,
                                                         std::string_view split,
                                                         const Tokenizer& tokenizer,
                                                         ClassificationOptions options) {
  const TsvSplit source = corpus.tsv_split(split);
  if (!source.labeled) options.label_column.clear();
  std::vector<std::string> required = options.text_columns;
  if (!options.label_column.empty()) required.push_back(options.label_column);
  return ClassificationDataset(read_tsv(source.path, required, source.columns, options.header),
                               tokenizer, options);
}

ClassificationBatch ClassificationDataset::batch(std::span<const int64_t> indices) const {
  const int64_t B = static_cast<int64_t>(indices.size());
  int64_t T = 1;
  for (int64_t i : indices) {
    ROTA_CHECK(i >= 0 && i < size(), "classification: example {} outside [0, {})", i, size());
    T = std::max<int64_t>(T, static_cast<int64_t>(sequences_[i].size()));
  }
  if (pad_to_max_length_) T = max_length_;
  ClassificationBatch batch;
  batch.tokens = Tensor::empty({B, T}, DType::kI64);
  batch.mask = Tensor::empty({B, T}, DType::kF32);
  batch.labels = Tensor::empty({B}, DType::kI64);
  int64_t* tokens = batch.tokens.data<int64_t>();
  float* mask = batch.mask.data<float>();
  int64_t* labels = batch.labels.data<int64_t>();
  for (int64_t b = 0; b < B; ++b) {
    const std::vector<int64_t>& sequence = sequences_[indices[b]];
    const int64_t length = static_cast<int64_t>(sequence.size());
    for (int64_t t = 0; t < T; ++t) {
      tokens[b * T + t] = t < length ? sequence[t] : pad_id_;
      mask[b * T + t] = t < length ? 1.0f : 0.0f;
    }
    labels[b] = labels_[indices[b]];
  }
  return batch;
}

}  // namespace rota::data
