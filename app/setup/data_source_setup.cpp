// Recipe data sources → corpora (see data_source_setup.h).
#include "app/setup/data_source_setup.h"

#include <filesystem>

#include "data/source/file_format.h"

namespace rota::app {

namespace {

data::FileFormat format_of(recipes::Files::Format format) {
  switch (format) {
    case recipes::Files::TEXT:
      return data::FileFormat::kText;
    case recipes::Files::JSONL:
      return data::FileFormat::kJsonl;
    case recipes::Files::CSV:
      return data::FileFormat::kCsv;
    case recipes::Files::TSV:
      return data::FileFormat::kTsv;
    default:
      return data::FileFormat::kAuto;
  }
}

}  // namespace

data::FileSourceSpec file_source_spec(const recipes::Recipe& recipe) {
  const recipes::Files& files = recipe.data().files();
  data::FileSourceSpec spec;
  spec.train = files.train();
  spec.valid = files.valid();
  spec.test = files.test();
  spec.format = format_of(files.format());
  spec.fields.text = files.text_field();
  if (recipe.model().kind() == recipes::Model::CLASSIFIER) {
    spec.fields.text_pair = files.text_pair_field();
    spec.fields.label = files.label_field();
  }
  spec.valid_fraction = files.valid_fraction();
  return spec;
}

std::string recipe_source_name(const recipes::Data& d) {
  if (d.has_corpus()) return d.corpus();
  if (d.has_text_dir()) return d.text_dir();
  if (d.has_tsv_dir()) return d.tsv_dir();
  if (d.has_files()) return d.files().train();
  if (d.has_prepared()) return d.prepared();
  return "";
}

data::Corpus open_recipe_corpus(const recipes::Recipe& recipe, const data::DataOptions& options) {
  const recipes::Data& d = recipe.data();
  if (d.has_files()) return data::Corpus::open_files(file_source_spec(recipe));
  if (d.has_text_dir()) {
    std::error_code error;
    if (std::filesystem::is_regular_file(d.text_dir(), error)) {
      data::refuse_structured_as_text(d.text_dir(), "data.text_dir");
    }
  }
  return data::Corpus::open(recipe_source_name(d), options);
}

}  // namespace rota::app
