// GLUE-style sequence classification: TSV rows -> [<cls>] tokens (+ <sep> pair), label; padded
// batches.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "data/corpus/corpus.h"
#include "data/dataset/batch.h"
#include "data/dataset/tsv.h"

namespace rota::data {

struct ClassificationOptions {
  /// One text column, or two for sentence-pair tasks.
  std::vector<std::string> text_columns = {"sentence"};
  /// The label column (non-negative integers); "" for an unlabelled split.
  std::string label_column = "label";
  /// Sequences longer than this (special tokens included) are truncated.
  int64_t max_length = 128;
  /// Pad every batch to max_length (fixed shapes) instead of to its longest sequence.
  bool pad_to_max_length = false;
  /// Put <cls> at position 0 (the classifier may pool there); needs a tokenizer with <cls>.
  bool add_cls = true;
  /// Put <sep> between the two texts of a pair; needs a tokenizer with <sep>.
  bool add_sep = true;
  /// Number of classes; 0 = largest label + 1 (at least 2).
  int64_t num_classes = 0;
  /// from_corpus: whether the files have a header line (kDetect: see parse_tsv).
  TsvHeader header = TsvHeader::kDetect;
};

/// One example before tokenisation: its text(s), class id (kIgnoreIndex: unlabelled) and where
/// it came from ("file:line", for messages).
struct TextExample {
  std::string text;
  std::string text_pair;  // used with two text columns
  int64_t label = -100;
  std::string origin;
};

/// Each row becomes [<cls>] encode(text1) [<sep>] [encode(text2)], texts trimmed of leading
/// and trailing whitespace. Too-long sequences lose tokens from the end of the longer text
/// first (longest-first truncation), never the special tokens. Batches are padded with
/// padding_id(tokenizer) and a mask of 1 at real tokens, 0 at padding.
class ClassificationDataset {
 public:
  ClassificationDataset(const TsvTable& table, const Tokenizer& tokenizer,
                        const ClassificationOptions& options);
  /// From examples whose labels are already class ids (options.text_columns only counts the
  /// texts: 2 = pairs; options.label_column empty = unlabelled). An example the tokenizer
  /// cannot encode is an error naming its origin.
  ClassificationDataset(const std::vector<TextExample>& examples, const Tokenizer& tokenizer,
                        const ClassificationOptions& options);
  /// Reads a split of a TSV corpus (header per options.header, detected by default; a split
  /// the registry marks unlabelled is read without labels).
  static ClassificationDataset from_corpus(const Corpus& corpus, std::string_view split,
                                           const Tokenizer& tokenizer,
                                           ClassificationOptions options);

  int64_t size() const { return static_cast<int64_t>(sequences_.size()); }
  int64_t num_classes() const { return num_classes_; }
  bool labeled() const { return labeled_; }
  /// Token ids of example i (special tokens included, no padding).
  const std::vector<int64_t>& sequence(int64_t i) const { return sequences_[i]; }
  /// Label of example i (kIgnoreIndex when unlabelled).
  int64_t label(int64_t i) const { return labels_[i]; }
  /// Number of examples that were truncated.
  int64_t truncated_count() const { return truncated_; }
  /// tokens/mask [B, T] (T = longest in the batch, or max_length), labels [B].
  ClassificationBatch batch(std::span<const int64_t> indices) const;

 private:
  void build(const std::vector<TextExample>& examples, const Tokenizer& tokenizer,
             const ClassificationOptions& options, const std::string& source);

  std::vector<std::vector<int64_t>> sequences_;
  std::vector<int64_t> labels_;
  int64_t num_classes_ = 0;
  bool labeled_ = true;
  int64_t truncated_ = 0;
  int64_t pad_id_ = 0;
  int64_t max_length_ = 0;
  bool pad_to_max_length_ = false;
};

}  // namespace rota::data
