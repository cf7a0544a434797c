// Choosing and building a run's tokenizer (see tokenizer_setup.h).
#include "app/setup/tokenizer_setup.h"

#include <algorithm>

#include <fmt/format.h>

#include "app/setup/data_source_setup.h"
#include "app/setup/document_setup.h"
#include "app/setup/prepared_setup.h"
#include "data/corpus/corpus.h"
#include "data/dataset/tsv.h"
#include "data/prepared/tokenizer_digest.h"
#include "data/tokenizer/open_tokenizer.h"
#include "data/tokenizer/sentencepiece_model_type.h"
#include "data/tokenizer/sentencepiece_tokenizer.h"
#include "framework/base/file_io.h"
#include "framework/base/scratch_directory.h"
#include "framework/io/checkpoint_paths.h"
#include "framework/io/log.h"
#include "recipes/corpora.h"
#include "recipes/recipe_error.h"

namespace fs = std::filesystem;

namespace rota::app {
namespace {

data::TokenizerKind kind_of(recipes::Tokenizer::Kind kind) {
  switch (kind) {
    case recipes::Tokenizer::BYTE:
      return data::TokenizerKind::kByte;
    case recipes::Tokenizer::CHAR:
      return data::TokenizerKind::kChar;
    case recipes::Tokenizer::WORD:
      return data::TokenizerKind::kWord;
    case recipes::Tokenizer::SENTENCEPIECE_BPE:
      return data::TokenizerKind::kBpe;
    case recipes::Tokenizer::SENTENCEPIECE_UNIGRAM:
      return data::TokenizerKind::kUnigram;
    case recipes::Tokenizer::HUGGINGFACE:
      break;  // loaded from a path, never built (validation refuses it without one)
  }
  throw recipes::RecipeError("data.tokenizer.kind: " + recipes::Tokenizer::Kind_Name(kind) +
                             " tokenizers are loaded from data.tokenizer.path, not built");
}

// The recipe kind a loaded tokenizer is (SentencePiece: by the model's algorithm).
std::string recipe_kind_of(const data::Tokenizer& tokenizer) {
  const std::string kind = tokenizer.kind();
  if (kind == "byte") return "BYTE";
  if (kind == "char") return "CHAR";
  if (kind == "word") return "WORD";
  if (kind == "huggingface") return "HUGGINGFACE";
  if (const auto* spm = dynamic_cast<const data::SentencePieceTokenizer*>(&tokenizer)) {
    const std::string type = data::sentencepiece_model_type(spm->serialized_model());
    if (type == "bpe") return "SENTENCEPIECE_BPE";
    if (type == "unigram") return "SENTENCEPIECE_UNIGRAM";
    return "SENTENCEPIECE (" + type + ")";
  }
  return kind;
}

// Opens data.tokenizer.path; a kind written next to it must be what the file holds.
std::shared_ptr<const data::Tokenizer> open_recipe_tokenizer(const recipes::Tokenizer& t) {
  std::shared_ptr<const data::Tokenizer> tokenizer = data::open_tokenizer(t.path());
  const std::string actual = recipe_kind_of(*tokenizer);
  if (t.has_kind() && recipes::Tokenizer::Kind_Name(t.kind()) != actual) {
    throw recipes::RecipeError(fmt::format(
        "data.tokenizer.kind: {}, but data.tokenizer.path {} holds a {} tokenizer; write kind: "
        "{} or leave kind out (the file says what it is)",
        recipes::Tokenizer::Kind_Name(t.kind()), t.path(), actual, actual));
  }
  io::log_info("tokenizer: {} ({} ids) from {}", actual, tokenizer->vocab_size(), t.path());
  return tokenizer;
}

// The text a tokenizer learns from: the training split (for TSV corpora and classifiers on
// data.files, its texts, one example per line).
std::string training_text(const recipes::Recipe& recipe, const data::DataOptions& options) {
  const data::Corpus corpus = open_recipe_corpus(recipe, options);
  if (const data::FileSource* files = corpus.file_source();
      files != nullptr && recipe.model().kind() == recipes::Model::CLASSIFIER) {
    // The texts of the training records, one per line (as for TSV corpora).
    std::string text;
    files->for_each_record("train", [&](const data::TextRecord& record) {
      text += record.text;
      text += '\n';
      if (!files->spec().fields.text_pair.empty()) {
        text += record.text_pair;
        text += '\n';
      }
    });
    return text;
  }
  if (corpus.format() == data::CorpusFormat::kText) return corpus.read_text("train");
  std::vector<std::string> columns = corpus.text_columns();
  if (recipe.data().has_tsv()) {
    columns = {recipe.data().tsv().text()};
    if (recipe.data().tsv().has_text_pair()) columns.push_back(recipe.data().tsv().text_pair());
  }
  const data::TsvSplit split = corpus.tsv_split("train");
  const data::TsvTable table = data::read_tsv(split.path, columns, split.columns);
  std::string text;
  for (const auto& row : table.rows) {
    for (const std::string& column : columns) {
      text += row[static_cast<size_t>(table.column(column))];
      text += '\n';
    }
  }
  return text;
}

}  // namespace

data::TokenizerSpec tokenizer_spec_from_recipe(const recipes::Recipe& recipe) {
  const recipes::Tokenizer& t = recipe.data().tokenizer();
  data::TokenizerSpec spec;
  spec.kind = kind_of(t.kind());
  std::vector<data::SpecialToken> specials = data::default_special_tokens(spec.kind);
  if (recipe.model().kind() != recipes::Model::CAUSAL_LM) {
    for (data::SpecialToken s : {data::SpecialToken::kPad, data::SpecialToken::kMask,
                                 data::SpecialToken::kCls, data::SpecialToken::kSep}) {
      if (std::find(specials.begin(), specials.end(), s) == specials.end()) specials.push_back(s);
    }
  }
  // Documents the source marks end with <sep> unless data.document_separator names a token.
  if (documents_need_separator_token(recipe) &&
      std::find(specials.begin(), specials.end(), data::SpecialToken::kSep) == specials.end()) {
    specials.push_back(data::SpecialToken::kSep);
  }
  spec.specials = specials;
  spec.vocab_size = t.has_vocab_size() ? t.vocab_size() : 0;
  spec.min_frequency = t.min_freq();
  spec.character_coverage = t.character_coverage();
  spec.byte_fallback = t.byte_fallback();
  return spec;
}

std::shared_ptr<const data::Tokenizer> obtain_tokenizer(
    const recipes::Recipe& recipe, const std::optional<fs::path>& checkpoint_dir,
    const data::DataOptions& data_options) {
  if (checkpoint_dir) return data::load_tokenizer(*checkpoint_dir);
  const recipes::Tokenizer& t = recipe.data().tokenizer();
  if (recipe.data().has_prepared()) {
    std::shared_ptr<const data::Tokenizer> tokenizer = prepared_tokenizer(recipe);
    // A recipe written for the raw text may name the tokenizer file the directory was
    // prepared with; any other would read the ids with another vocabulary.
    if (t.has_path() &&
        data::tokenizer_digest(*open_recipe_tokenizer(t)) != data::tokenizer_digest(*tokenizer)) {
      throw recipes::RecipeError(fmt::format(
          "data.tokenizer.path: {} is not the tokenizer the prepared directory {} was made "
          "with (a {} tokenizer of {} ids); leave the path out (--unset data.tokenizer.path) to "
          "train with the directory's own, or prepare the directory again with this tokenizer "
          "(rota data prepare RECIPE --out DIR)",
          t.path(), recipe.data().prepared(), tokenizer->kind(), tokenizer->vocab_size()));
    }
    return tokenizer;
  }
  if (t.has_path()) return open_recipe_tokenizer(t);
  if (recipe.has_finetune()) {
    const fs::path source = io::resolve_checkpoint(recipe.finetune().init_from());
    auto tokenizer = data::load_tokenizer(source);
    io::log_info("tokenizer: {} ({} ids) from the pretrained checkpoint {}", tokenizer->kind(),
                 tokenizer->vocab_size(), source.string());
    return tokenizer;
  }
  const data::TokenizerSpec spec = tokenizer_spec_from_recipe(recipe);
  auto tokenizer = data::build_tokenizer(spec, training_text(recipe, data_options));
  io::log_info("tokenizer: {} built from the training split: {} ids",
               data::tokenizer_kind_name(spec.kind), tokenizer->vocab_size());
  return tokenizer;
}

std::map<std::string, std::string> tokenizer_files(const data::Tokenizer& tokenizer) {
  const ScratchDirectory dir(kTokenizerScratchPrefix);
  tokenizer.save(dir.path());
  std::map<std::string, std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    files[entry.path().filename().string()] = read_file(entry.path());
  }
  return files;
}

std::shared_ptr<const data::Tokenizer> tokenizer_from_files(
    const std::map<std::string, std::string>& files) {
  const ScratchDirectory dir(kTokenizerScratchPrefix);
  for (const auto& [name, bytes] : files) write_file_atomically(dir.path() / name, bytes);
  return data::load_tokenizer(dir.path());
}

}  // namespace rota::app
