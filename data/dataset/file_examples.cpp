// Turning file records into classification examples.
#include "data/dataset/file_examples.h"

#include "data/dataset/batch.h"
#include "framework/base/error.h"

namespace rota::data {

std::vector<std::string> record_labels(const FileSource& files, std::string_view split) {
  ROTA_CHECK(!files.spec().fields.label.empty(), "data: the data files have no label field");
  std::vector<std::string> labels;
  files.for_each_record(split, [&](const TextRecord& record) {
    ROTA_CHECK(!record.text_file,
               "data: {}: a text file has no labels; a classifier reads JSONL, CSV or TSV records "
               "(set data.files.format, or use .jsonl/.csv/.tsv files)",
               record.file);
    labels.push_back(record.label);
  });
  return labels;
}

std::vector<TextExample> file_examples(const FileSource& files, std::string_view split,
                                       const LabelMap* labels) {
  std::vector<TextExample> examples;
  files.for_each_record(split, [&](const TextRecord& record) {
    ROTA_CHECK(!record.text_file,
               "data: {}: a text file has no labels; a classifier reads JSONL, CSV or TSV records "
               "(set data.files.format, or use .jsonl/.csv/.tsv files)",
               record.file);
    TextExample example;
    example.text = record.text;
    example.text_pair = record.text_pair;
    example.origin = record.origin();
    example.label = labels != nullptr ? labels->id(record.label, example.origin) : kIgnoreIndex;
    examples.push_back(std::move(example));
  });
  return examples;
}

}  // namespace rota::data
