// Fuzzes the readers of users' data files (data/source: TEXT, JSONL, CSV, TSV) and GLUE's TSV.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

#include "data/dataset/tsv.h"
#include "data/source/file_source.h"
#include "framework/base/error.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace fs = std::filesystem;
  namespace rd = rota::data;
  if (size == 0) return 0;
  // First byte: the format (low 3 bits) and which fields the records are read with.
  const uint8_t mode = data[0];
  const std::string_view bytes = rota::fuzz::as_text(data + 1, size - 1);
  try {
    if (mode % 8 >= 4) {
      rd::parse_tsv(bytes, {"sentence", "label"},
                    (mode & 8) ? std::vector<std::string>{"a", "b"} : std::vector<std::string>{});
      return 0;
    }
    static const rd::FileFormat kFormats[] = {rd::FileFormat::kText, rd::FileFormat::kJsonl,
                                              rd::FileFormat::kCsv, rd::FileFormat::kTsv};
    const rd::FileFormat format = kFormats[mode % 4];
    rd::RecordFields fields;
    if (mode & 8) fields.label = "label";
    if (mode & 16) fields.text_pair = "pair";
    if (mode & 32) fields.text = "meta.body";
    const fs::path file = rota::fuzz::scratch_dir("source") / "data";
    rota::fuzz::write_bytes(file, bytes);
    size_t total = 0;
    rd::for_each_file_record(file, format, fields, [&](const rd::TextRecord& record) {
      total += record.text.size() + record.text_pair.size() + record.label.size();
    });
    // Records are made of the input's bytes (unquoting and unescaping only shrink them).
    if (total > 2 * bytes.size() + 16) __builtin_trap();
  } catch (const rota::Error&) {
    // The expected outcome for a bad file.
  }
  return 0;
}
